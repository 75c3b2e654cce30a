// Package cli dispatches the subcommands of the project's multi-command
// binaries (meazo-inspect, meazo-bench, meazo-eval, meazo-plot,
// meazo-sweep, meazo-synth), so that they share one usage text, -h on every
// subcommand saying what it does, reads and prints with an example (Help),
// one-line errors and exit statuses.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/meazo-go/meazo/internal/buildinfo"
	"github.com/meazo-go/meazo/internal/suggest"
)

// RunFunc runs one subcommand; it parses its own flags from args.
type RunFunc func(args []string, stdin io.Reader, stdout io.Writer) error

type command struct {
	help Help
	run  RunFunc
}

// Set is a binary's subcommands. Exec is not for concurrent use on one Set:
// the subcommand it runs writes its -h text to the stderr it was given.
type Set struct {
	program, noun string // e.g. "meazo-bench", "mode"
	commands      map[string]command
	exitStatus    func(error) int // nil: 1 for every error
	stderr        io.Writer       // Exec's, while it runs a subcommand (Flags)
}

// New returns an empty set for the named program; noun is what a
// subcommand is called in its usage text ("command", "mode").
func New(program, noun string) *Set {
	return &Set{program: program, noun: noun, commands: map[string]command{}}
}

// Register adds a subcommand, with what it says of itself (Help); its
// RunFunc makes its flag set with Flags, so that -h prints h.
func (s *Set) Register(name string, h Help, run RunFunc) {
	s.commands[name] = command{help: h, run: run}
}

// Names are the subcommands' names, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.commands))
	for n := range s.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ExitStatus makes Main exit with status(err) when a subcommand fails
// instead of 1 (the error is printed the same way). It is for a program
// whose failures tell a caller different things to do next: meazo-sweep
// exits 3 when a signal interrupted the study, which `meazo-sweep resume`
// continues, and 1 when runs failed. status should keep 2, which means a
// usage error, for usage errors.
func (s *Set) ExitStatus(status func(err error) int) {
	s.exitStatus = status
}

func (s *Set) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <%s> [flags]   (%s <%s> -h: what it reads and prints, its flags; %s -version: which build)\n%ss:\n",
		s.program, s.noun, s.program, s.noun, s.program, s.noun)
	width := 10
	for n := range s.commands {
		width = max(width, len(n))
	}
	for _, n := range s.Names() {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, s.commands[n].help.Summary)
	}
}

// Main runs the subcommand named by os.Args[1] and exits with the status
// Exec returns.
func (s *Set) Main() {
	LowGC()
	if status := s.Exec(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); status != 0 {
		os.Exit(status)
	}
}

// Exec runs the subcommand named by args[0] with the rest of args and
// returns the exit status Main exits with: 0 when it succeeds (and for -h,
// and -version, which prints the build: buildinfo.String),
// 2 for a usage error (no or an unknown subcommand, for which the usage is
// printed, or a UsageError from the subcommand: a flag that does not parse),
// and 1, or what ExitStatus maps its error to, when it fails, the error
// printed on one line after the program's and the subcommand's names. The
// usage and the error go to stderr; it is Main without the exit, for tests.
func (s *Set) Exec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "help" {
		if _, ok := s.commands[args[1]]; ok {
			args = []string{args[1], "-h"} // "prog help forward": forward's help, as go help build
		}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		s.usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "-version" || args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, buildinfo.String(s.program))
		return 0
	}
	cmd, ok := s.commands[args[0]]
	if !ok {
		hint := ""
		if c := suggest.Closest(args[0], s.Names()); c != "" && suggest.Distance(args[0], c) <= min(2, len(args[0])-1) {
			hint = fmt.Sprintf(" (did you mean %q?)", c)
		}
		fmt.Fprintf(stderr, "%s: unknown %s %q%s\n", s.program, s.noun, args[0], hint)
		s.usage(stderr)
		return 2
	}
	s.stderr = stderr
	defer func() { s.stderr = nil }()
	err := cmd.run(args[1:], stdin, stdout)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", s.program, args[0], err)
	if ue := (*UsageError)(nil); errors.As(err, &ue) {
		fmt.Fprintf(stderr, "(%s %s -h: what it takes)\n", s.program, args[0])
		return 2
	}
	if s.exitStatus != nil {
		return s.exitStatus(err)
	}
	return 1
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

// Parse parses a subcommand's arguments as fs.Parse does, but takes flags
// after positional arguments too, as people type them ("meazo-sweep status
// study.yaml -v"): the flag package alone stops at the first positional
// argument and reads the rest as positional ("-v" as a second study file).
// "--" still ends the flags; fs.Args() are the positional arguments in their
// order.
func Parse(fs *flag.FlagSet, args []string) error {
	err := parse(fs, args)
	if o, ok := fs.Output().(*flagOutput); ok {
		if errors.Is(err, flag.ErrHelp) {
			o.w.Write(o.buf.Bytes())
		}
		o.buf.Reset()
	}
	return didYouMean(fs, err)
}

// didYouMean adds the closest defined flag to the flag package's error for
// an undefined one (-predictons: did you mean -predictions?).
func didYouMean(fs *flag.FlagSet, err error) error {
	const undefined = "flag provided but not defined: -"
	if err == nil || !strings.HasPrefix(err.Error(), undefined) {
		return err
	}
	name := strings.TrimPrefix(err.Error(), undefined)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := suggest.Closest(name, names); c != "" && suggest.Distance(name, c) <= min(2, len(name)-1) {
		return fmt.Errorf("%w (did you mean -%s?)", err, c)
	}
	return err
}

// flagOutput holds what the flag package writes while it parses (an
// error's message, and the usage it prints after one) until Parse knows
// whether -h asked for that usage: a flag that does not parse is then said
// once, by Exec, rather than as the message, the whole usage and the
// message again.
type flagOutput struct {
	w   io.Writer
	buf bytes.Buffer
}

func (o *flagOutput) Write(p []byte) (int, error) { return o.buf.Write(p) }

func parse(fs *flag.FlagSet, args []string) error {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil || hasValue {
			continue // fs.Parse reports an unknown flag
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 == len(args) { // no value: fs.Parse says so
			return fs.Parse(flags)
		}
		i++ // the flag's value
		flags = append(flags, args[i])
	}
	return fs.Parse(append(append(flags, "--"), positional...))
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

// UsageError is an error in a subcommand's command line: a flag that does
// not parse, or arguments of the wrong number. Exec exits 2 for it, as for
// an unknown subcommand, and 1 for a failure of the work itself.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage marks err as a command-line error (nil stays nil; flag.ErrHelp, from
// -h, still exits 0).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{err}
}

// NoArgs refuses, as a usage error (exit 2), the positional arguments left
// after Parse for a subcommand that takes flags only: a stray word
// ("meazo-bench forward llama1b", a flag's value after a space where it
// wanted "=") is said, not ignored while the command runs as if it had not
// been given.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return Usage(fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0)))
	}
	return nil
}

// Alias defines the flag alias on fs as another name of the flag name,
// already defined: both set the same value. A spelling kept working after a
// flag was renamed to match the other commands' (-bf16 of -bf16-weights),
// or the other commands' spelling accepted beside this one's; -h lists it
// as "the same as -name".
func Alias(fs *flag.FlagSet, alias, name string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("cli.Alias: no flag -" + name)
	}
	fs.Var(f.Value, alias, "the same as -"+name)
}

// Given is the set of fs's flags the command line set, by every name each
// has: a flag given by its Alias counts as given under its own name too
// (and the other way), so that a command that takes a value from elsewhere
// where a flag was left out (meazo-eval task from a run's config.yaml)
// does not replace one given by its other spelling.
func Given(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		fs.VisitAll(func(g *flag.Flag) {
			if g.Value == f.Value {
				given[g.Name] = true
			}
		})
	})
	return given
}
