// Command meazo-bench measures the compute kernels the trainer runs on. Each
// mode lives in its own file and registers itself in init:
//
//	meazo-bench gemm      GEMM GFLOP/s on the model shapes vs OpenBLAS and the FMA peak
//
// Build with GOEXPERIMENT=simd for the SIMD kernels and with -tags openblas
// (cgo, libopenblas-dev) to compare against OpenBLAS in the same run; see
// scripts/bench_gemm.sh.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one mode: run parses its own flags from args.
type command struct {
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: meazo-bench <mode> [flags]   (meazo-bench <mode> -h for its flags)")
	fmt.Fprintln(w, "modes:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(os.Stderr)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "meazo-bench: unknown mode %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:], os.Stdout); err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintf(os.Stderr, "meazo-bench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
