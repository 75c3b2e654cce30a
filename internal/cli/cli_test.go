package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"github.com/meazo-go/meazo/internal/buildinfo"
	"io"
	"strings"
	"testing"
)

var errStopped = errors.New("stopped")

// testSet is a program with a subcommand that succeeds, one that fails,
// one whose error maps to 3, and one that parses flags (-h) and takes no
// arguments.
func testSet() *Set {
	s := New("prog", "command")
	s.Register("ok", Help{Summary: "succeeds"}, func(_ []string, _ io.Reader, stdout io.Writer) error {
		fmt.Fprintln(stdout, "done")
		return nil
	})
	s.Register("fail", Help{Summary: "fails"}, func([]string, io.Reader, io.Writer) error { return errors.New("broken") })
	s.Register("stop", Help{Summary: "is interrupted"}, func([]string, io.Reader, io.Writer) error {
		return fmt.Errorf("study: %w", errStopped)
	})
	s.Register("flags", Help{Summary: "parses flags", Synopsis: "[-v] FILE", Does: "Parses its flags.", Reads: "FILE: nothing in it",
		Prints: "nothing", Example: "prog flags -v f"}, func(args []string, _ io.Reader, _ io.Writer) error {
		fs := s.Flags("flags")
		fs.Bool("v", false, "verbose")
		if err := Parse(fs, args); err != nil {
			return Usage(err)
		}
		if fs.NArg() > 0 {
			return Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
		}
		return nil
	})
	s.Register("flagsonly", Help{Summary: "flags only"}, func(args []string, _ io.Reader, stdout io.Writer) error {
		fs := s.Flags("flagsonly")
		n := fs.Int("n", 1, "how many")
		Alias(fs, "count", "n")
		if err := Parse(fs, args); err != nil {
			return Usage(err)
		}
		if err := NoArgs(fs); err != nil {
			return err
		}
		fmt.Fprintln(stdout, *n)
		return nil
	})
	s.ExitStatus(func(err error) int {
		if errors.Is(err, errStopped) {
			return 3
		}
		return 1
	})
	return s
}

func TestExec(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		status         int
		stdout, stderr string // stderr: contained in it; "" means empty
	}{
		{[]string{"ok"}, 0, "done\n", ""},
		{[]string{"-version"}, 0, buildinfo.String("prog") + "\n", ""},
		{[]string{"--version"}, 0, buildinfo.String("prog") + "\n", ""},
		{[]string{"version"}, 0, buildinfo.String("prog") + "\n", ""},
		{[]string{}, 2, "", "usage: prog <command> [flags]"},
		{[]string{"-h"}, 0, "", "  fail       fails\n"},
		{[]string{"frobnicate"}, 2, "", "prog: unknown command \"frobnicate\"\nusage: prog"},
		{[]string{"flag"}, 2, "", "prog: unknown command \"flag\" (did you mean \"flags\"?)\n"},
		{[]string{"help", "flags"}, 0, "", "usage: prog flags [-v] FILE\n\nParses its flags.\n"},
		{[]string{"help", "frobnicate"}, 0, "", "usage: prog <command> [flags]"},
		{[]string{"fail"}, 1, "", "prog fail: broken\n"},
		{[]string{"stop"}, 3, "", "prog stop: study: stopped\n"},
		{[]string{"flags", "-h"}, 0, "", "usage: prog flags [-v] FILE\n\nParses its flags.\n\nReads:    FILE: nothing in it\n"},
		{[]string{"flags", "-x"}, 2, "", "prog flags: flag provided but not defined: -x\n"},
		{[]string{"flags", "a"}, 2, "", "prog flags: unexpected argument \"a\"\n"},
		{[]string{"flagsonly", "-n", "3", "a"}, 2, "", "prog flagsonly: unexpected argument \"a\" (flags only)\n(prog flagsonly -h"},
		{[]string{"flagsonly", "-n", "3"}, 0, "3\n", ""},
		{[]string{"flagsonly", "-count=4"}, 0, "4\n", ""},
		{[]string{"flagsonly", "-count", "5", "-h"}, 0, "", "  -count int\n    \tthe same as -n (default 1)\n"},
	} {
		var stdout, stderr bytes.Buffer
		status := testSet().Exec(tc.args, nil, &stdout, &stderr)
		if status != tc.status || stdout.String() != tc.stdout ||
			(tc.stderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q and stderr with %q",
				tc.args, status, stdout.String(), stderr.String(), tc.status, tc.stdout, tc.stderr)
		}
	}
}

// TestExitStatusDefault: without ExitStatus every failure exits 1.
func TestExitStatusDefault(t *testing.T) {
	s := New("prog", "command")
	s.Register("stop", Help{}, func([]string, io.Reader, io.Writer) error { return errStopped })
	if status := s.Exec([]string{"stop"}, nil, io.Discard, io.Discard); status != 1 {
		t.Errorf("status %d, want 1", status)
	}
}

// TestFlags: -h prints the command's Help, each part in its place, then the
// flags, to Exec's stderr; a bad flag is an error that names it.
func TestFlags(t *testing.T) {
	s := New("prog", "command")
	s.Register("cmd", Help{Summary: "s", Synopsis: "[-v] FILE...", Does: "Does it.\nTwice.", Reads: "FILE: a file\nor two", Prints: "a line",
		Example: "prog cmd a\nprog cmd -v a b"}, func(args []string, _ io.Reader, _ io.Writer) error {
		fs := s.Flags("cmd")
		fs.Bool("v", false, "verbose")
		return Usage(Parse(fs, args))
	})
	var out bytes.Buffer
	if status := s.Exec([]string{"cmd", "-h"}, nil, io.Discard, &out); status != 0 {
		t.Errorf("-h: status %d", status)
	}
	want := "usage: prog cmd [-v] FILE...\n\nDoes it.\nTwice.\n\nReads:    FILE: a file\n          or two\nPrints:   a line\n" +
		"Example:  prog cmd a\n          prog cmd -v a b\n\nFlags:\n  -v\tverbose\n"
	if out.String() != want {
		t.Errorf("-h printed\n%s\nwant\n%s", out.String(), want)
	}
	// A flag that does not parse is said once, with where the usage is,
	// not as the message, the whole usage, and the message again.
	out.Reset()
	if status := s.Exec([]string{"cmd", "-x"}, nil, io.Discard, &out); status != 2 ||
		out.String() != "prog cmd: flag provided but not defined: -x\n(prog cmd -h: what it takes)\n" {
		t.Errorf("-x: status %d, printed %q", status, out.String())
	}
	// A mistyped flag gets the closest one named.
	out.Reset()
	if status := s.Exec([]string{"cmd", "-vv"}, nil, io.Discard, &out); status != 2 ||
		!strings.HasPrefix(out.String(), "prog cmd: flag provided but not defined: -vv (did you mean -v?)\n") {
		t.Errorf("-vv: status %d, printed %q", status, out.String())
	}
}

// TestCheckHelp: a Help that lacks a part, an example that runs another
// command, Reads that does not name an argument of the synopsis, or a -h
// that does not print the Help fails.
func TestCheckHelp(t *testing.T) {
	good := Help{Summary: "s", Synopsis: "[--out DIR] [-v] (--model NAME | --config c.json) RUN_DIR... [flags]", Does: "d",
		Reads: "RUN_DIR: runs", Prints: "p", Example: "prog cmd x"}
	for _, tc := range []struct {
		change func(*Help)
		want   string // in the error; "" none
	}{
		{func(*Help) {}, ""},
		{func(h *Help) { h.Prints = " \n" }, "no Prints"},
		{func(h *Help) { h.Summary, h.Does = "", "" }, "no Summary; no Does"},
		{func(h *Help) { h.Example = "prog cmd x\nprog other y" }, `the example "prog other y" does not run prog cmd`},
		{func(h *Help) { h.Reads = "runs" }, "Reads does not say what RUN_DIR is"},
		{func(h *Help) { h.Synopsis = "--coarse LIST ETA" }, "Reads does not say what ETA is"},
		{func(h *Help) { h.Synopsis = "--model DIR < lines.jsonl" }, "Reads does not say what lines.jsonl is"},
	} {
		h := good
		tc.change(&h)
		s := New("prog", "command")
		s.Register("cmd", h, func(args []string, _ io.Reader, _ io.Writer) error { return Parse(s.Flags("cmd"), args) })
		err := s.CheckHelp()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", h, err, tc.want)
		}
	}
	s := New("prog", "command")
	s.Register("cmd", good, func(args []string, _ io.Reader, _ io.Writer) error {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError) // not Flags: -h prints no Help
		fs.SetOutput(io.Discard)
		return Parse(fs, args)
	})
	if err := s.CheckHelp(); err == nil || !strings.Contains(err.Error(), "prog cmd -h: exit status 0") {
		t.Errorf("a flag set of its own: %v", err)
	}
}

// TestParse: flags are taken before and after positional arguments; "--"
// ends them; errors and -h are fs.Parse's.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		v    bool
		out  string
		pos  string
		err  string
	}{
		{args: []string{"study.yaml", "-v"}, v: true, pos: "study.yaml"},
		{args: []string{"-v", "study.yaml"}, v: true, pos: "study.yaml"},
		{args: []string{"a", "--out", "figs", "b"}, out: "figs", pos: "a b"},
		{args: []string{"a", "--out=figs", "-v=false", "b"}, out: "figs", pos: "a b"},
		{args: []string{"a", "--", "-v", "--out"}, pos: "a -v --out"},
		{args: []string{"-", "a"}, pos: "- a"},
		{args: []string{"a", "-x"}, err: "flag provided but not defined: -x"},
		{args: []string{"a", "--out"}, err: "flag needs an argument: -out"},
		{args: []string{"a", "-h"}, err: flag.ErrHelp.Error()},
	} {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		v := fs.Bool("v", false, "")
		out := fs.String("out", "", "")
		err := Parse(fs, tc.args)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || *v != tc.v || *out != tc.out || strings.Join(fs.Args(), " ") != tc.pos {
			t.Errorf("%q: -v %v --out %q args %q (%v), want %v %q %q", tc.args, *v, *out, fs.Args(), err, tc.v, tc.out, tc.pos)
		}
	}
}
