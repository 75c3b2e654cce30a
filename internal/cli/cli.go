// Package cli dispatches the subcommands of the project's multi-command
// binaries (meazo-inspect, meazo-bench, meazo-plot): each subcommand lives in its own file
// and registers itself in init.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
)

// RunFunc runs one subcommand; it parses its own flags from args.
type RunFunc func(args []string, stdin io.Reader, stdout io.Writer) error

type command struct {
	summary string
	run     RunFunc
}

// Set is a binary's subcommands.
type Set struct {
	program, noun string // e.g. "meazo-bench", "mode"
	commands      map[string]command
}

// New returns an empty set for the named program; noun is what a
// subcommand is called in its usage text ("command", "mode").
func New(program, noun string) *Set {
	return &Set{program: program, noun: noun, commands: map[string]command{}}
}

// Register adds a subcommand.
func (s *Set) Register(name, summary string, run RunFunc) {
	s.commands[name] = command{summary: summary, run: run}
}

func (s *Set) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <%s> [flags]   (%s <%s> -h for its flags)\n%ss:\n", s.program, s.noun, s.program, s.noun, s.noun)
	names := make([]string, 0, len(s.commands))
	width := 10
	for n := range s.commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, s.commands[n].summary)
	}
}

// Main runs the subcommand named by os.Args[1] and exits: 2 for a usage
// error, 1 when the subcommand fails (its error printed on one line).
func (s *Set) Main() {
	LowGC()
	args := os.Args[1:]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		s.usage(os.Stderr)
		if len(args) == 0 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := s.commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown %s %q\n", s.program, s.noun, args[0])
		s.usage(os.Stderr)
		os.Exit(2)
	}
	if err := cmd.run(args[1:], os.Stdin, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", s.program, args[0], err)
		os.Exit(1)
	}
}

// Run runs the named subcommand with the given arguments and streams (for
// tests and for calling one subcommand from another).
func (s *Set) Run(name string, args []string, stdin io.Reader, stdout io.Writer) error {
	cmd, ok := s.commands[name]
	if !ok {
		return fmt.Errorf("unknown %s %q", s.noun, name)
	}
	return cmd.run(args, stdin, stdout)
}

// LowGC makes the garbage collector run when the heap has grown 10% over
// the live data instead of Go's default 100%, unless GOGC is set. A loaded
// model is gigabytes of live float32 weights, so the default would let as
// much again of dead activations pile up and double the peak memory.
func LowGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(10)
	}
}
