// Command meazo-inspect looks inside the pieces a training run is made of:
// checkpoints (forward, generate), tokenizers and chat templates, training
// examples, and the perturbation noise. Each subcommand lives in its own file
// and registers itself in init.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand: run parses its own flags from args.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdin io.Reader, stdout io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: meazo-inspect <command> [flags]   (meazo-inspect <command> -h for its flags)")
	fmt.Fprintln(w, "commands:")
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
		fmt.Fprintf(os.Stderr, "meazo-inspect: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:], os.Stdin, os.Stdout); err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintf(os.Stderr, "meazo-inspect %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
