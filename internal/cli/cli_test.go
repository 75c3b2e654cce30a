package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
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
	s.Register("ok", "succeeds", func(_ []string, _ io.Reader, stdout io.Writer) error {
		fmt.Fprintln(stdout, "done")
		return nil
	})
	s.Register("fail", "fails", func([]string, io.Reader, io.Writer) error { return errors.New("broken") })
	s.Register("stop", "is interrupted", func([]string, io.Reader, io.Writer) error {
		return fmt.Errorf("study: %w", errStopped)
	})
	s.Register("flags", "parses flags", func(args []string, _ io.Reader, _ io.Writer) error {
		fs := flag.NewFlagSet("flags", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(args); err != nil {
			return Usage(err)
		}
		if fs.NArg() > 0 {
			return Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
		}
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
		{[]string{}, 2, "", "usage: prog <command> [flags]"},
		{[]string{"-h"}, 0, "", "  fail       fails\n"},
		{[]string{"frobnicate"}, 2, "", "prog: unknown command \"frobnicate\"\nusage: prog"},
		{[]string{"fail"}, 1, "", "prog fail: broken\n"},
		{[]string{"stop"}, 3, "", "prog stop: study: stopped\n"},
		{[]string{"flags", "-h"}, 0, "", ""},
		{[]string{"flags", "-x"}, 2, "", "prog flags: flag provided but not defined: -x\n"},
		{[]string{"flags", "a"}, 2, "", "prog flags: unexpected argument \"a\"\n"},
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
	s.Register("stop", "", func([]string, io.Reader, io.Writer) error { return errStopped })
	if status := s.Exec([]string{"stop"}, nil, io.Discard, io.Discard); status != 1 {
		t.Errorf("status %d, want 1", status)
	}
}

// TestFlags: -h prints the synopsis and the flags to the given writer; a
// bad flag is an error that names it.
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	fs := Flags("prog", "cmd", "[-v] FILE", &out)
	fs.Bool("v", false, "verbose")
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	if want := "usage: prog cmd [-v] FILE\n  -v\tverbose\n"; out.String() != want {
		t.Errorf("-h printed %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := Flags("prog", "cmd", "", &out).Parse([]string{"-x"}); err == nil || !strings.Contains(out.String(), "usage: prog cmd\n") {
		t.Errorf("-x: %v, printed %q", err, out.String())
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
		fs := Flags("prog", "cmd", "", io.Discard)
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
