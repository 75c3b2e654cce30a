package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Help is what a subcommand says of itself: the line in its program's list
// of subcommands, and what -h prints, so that a user learns from -h alone
// what the command is for, what to give it and what comes back, without
// reading the source or the docs.
type Help struct {
	Summary  string // one line, in the program's list of subcommands
	Synopsis string // the arguments after the command's name: "[--out DIR] RUN_DIR..."
	Does     string // what it does, and why one runs it
	Reads    string // its inputs: each argument of Synopsis by name, the files it reads in them, stdin
	Prints   string // what it prints on stdout, and the files it writes
	Example  string // one command line or more, one a line
}

// helpIndent is the width of the labels of Reads, Prints and Example.
const helpIndent = len("Example:  ")

// write prints the help of program's command, then fs's flags, to w.
func (h Help) write(w io.Writer, program, command string, fs *flag.FlagSet) {
	fmt.Fprintln(w, strings.TrimSpace("usage: "+program+" "+command+" "+h.Synopsis))
	fmt.Fprintf(w, "\n%s\n\n", strings.TrimSpace(h.Does))
	for _, f := range []struct{ label, text string }{{"Reads:", h.Reads}, {"Prints:", h.Prints}, {"Example:", h.Example}} {
		lines := strings.Split(strings.TrimSpace(f.text), "\n")
		fmt.Fprintf(w, "%-*s%s\n", helpIndent, f.label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%*s%s\n", helpIndent, "", l)
		}
	}
	flags := false
	fs.VisitAll(func(*flag.Flag) { flags = true })
	if flags {
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
}

// check says what the help of program's command lacks: a summary, the
// parts -h prints, an example that calls the command, and in Reads each
// argument the synopsis names (RUN_DIR, STUDY.yaml) outside its flags.
func (h Help) check(program, command string) error {
	var missing []string
	for _, f := range []struct{ name, text string }{{"Summary", h.Summary}, {"Does", h.Does}, {"Reads", h.Reads}, {"Prints", h.Prints}, {"Example", h.Example}} {
		if strings.TrimSpace(f.text) == "" {
			missing = append(missing, "no "+f.name)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(h.Example), "\n") {
		if !strings.Contains(l, program+" "+command) {
			missing = append(missing, fmt.Sprintf("the example %q does not run %s %s", l, program, command))
		}
	}
	for _, a := range synopsisArgs(h.Synopsis) {
		if !strings.Contains(h.Reads, a) {
			missing = append(missing, fmt.Sprintf("Reads does not say what %s is", a))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s %s -h: %s", program, command, strings.Join(missing, "; "))
	}
	return nil
}

// synopsisArgs are the positional arguments a synopsis names: its words
// that are neither flags nor a flag's value, without brackets and "...".
func synopsisArgs(synopsis string) []string {
	var args []string
	afterFlag := false // the word before was a flag that takes a value
	for _, raw := range strings.Fields(synopsis) {
		w := strings.Trim(raw, "[]()")
		switch {
		case strings.HasPrefix(w, "-"): // "[-v]", "--in=F": no value follows
			afterFlag = !strings.Contains(w, "=") && !strings.HasSuffix(raw, "]")
		case afterFlag:
			afterFlag = false
		case w != "" && w != "|" && w != "<" && w != "flags":
			args = append(args, strings.TrimSuffix(w, "..."))
		}
	}
	return args
}

// Flags returns the flag set of a registered subcommand
// (flag.ContinueOnError): -h, and a flag that does not parse, print its
// Help and its flags' defaults to the stderr Exec was given (os.Stderr when
// it runs through Run).
func (s *Set) Flags(command string) *flag.FlagSet {
	h := s.commands[command].help
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	out := s.stderr
	if out == nil {
		out = os.Stderr
	}
	fs.SetOutput(&flagOutput{w: out}) // written out on -h only (Parse)
	fs.Usage = func() { h.write(fs.Output(), s.program, command, fs) }
	return fs
}

// CheckHelp says, for the programs' tests, what each subcommand's Help
// lacks (Help.check) and which subcommand's -h does not print it (a flag
// set not made by Flags): every subcommand explains itself.
func (s *Set) CheckHelp() error {
	var errs []error
	for _, name := range s.Names() {
		errs = append(errs, s.commands[name].help.check(s.program, name))
		var out strings.Builder
		status := s.Exec([]string{name, "-h"}, strings.NewReader(""), io.Discard, &out)
		if want := "usage: " + s.program + " " + name; status != 0 || !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "\nReads:") {
			errs = append(errs, fmt.Errorf("%s %s -h: exit status %d, printed %q; want its Help", s.program, name, status, out.String()))
		}
	}
	return errors.Join(errs...)
}
