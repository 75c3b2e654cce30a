// Command meazo-synth runs the zeroth-order optimizers on synthetic quadratics
// with exact function values (package synth holds the experiments):
//
//	meazo-synth trace --spec SPEC.json       one optimizer, one JSON line per step
//	meazo-synth paper --out DIR [--quick]    the paper's Sec. 5.1 / App. C experiments (CSV + SVG)
//
// The subcommands are dispatched by internal/cli like those of the other
// multi-command binaries: -h after one shows its flags; exit status 0 done,
// 1 the subcommand failed (the error on one line, as
// 'meazo-synth COMMAND: …'), 2 no or an unknown subcommand.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/synth"
)

func main() { newCommands(os.Stderr).Main() }

// newCommands returns meazo-synth's subcommands; log gets paper's progress
// and summary, flag errors and -h text (stderr; a buffer in tests).
func newCommands(log io.Writer) *cli.Set {
	s := cli.New("meazo-synth", "command")
	s.Register("trace", "one optimizer on a diagonal quadratic from SPEC.json, one JSON line per step",
		func(args []string, _ io.Reader, stdout io.Writer) error { return runTrace(args, stdout, log) })
	s.Register("paper", "the paper's synthetic experiments (Sec. 5.1, App. C): CSV, SVG and summary.md in --out",
		func(args []string, _ io.Reader, _ io.Writer) error { return runPaper(args, log) })
	return s
}

// newFlags makes a subcommand's flag set; synopsis is what its -h prints
// after the command's name (the flags' defaults follow).
func newFlags(name, synopsis string, log io.Writer) *flag.FlagSet {
	return cli.Flags("meazo-synth", name, synopsis, log)
}

// runTrace runs the trace subcommand: its JSON lines go to stdout, flag
// errors and -h text to log.
func runTrace(args []string, stdout, log io.Writer) error {
	fs := newFlags("trace", "--spec SPEC.json\n\n"+synth.SpecHelp, log)
	specPath := fs.String("spec", "", "SPEC.json")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *specPath == "" {
		return cli.Usage(fmt.Errorf("--spec is required"))
	}
	raw, err := inputfile.ReadFile(*specPath)
	if err != nil {
		return err
	}
	t, err := synth.ParseTrace(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", *specPath, err)
	}
	return t.Run(stdout)
}

// runPaper runs the paper subcommand: the files go to --out; progress, the
// summary, flag errors and -h text to log.
func runPaper(args []string, log io.Writer) error {
	fs := newFlags("paper", "--out DIR [--quick]", log)
	out := fs.String("out", "", "output directory (created)")
	quick := fs.Bool("quick", false, "small version (3 seeds, 300 steps, 4 rates, d = 9 and 25) for a smoke test")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *out == "" {
		return cli.Usage(fmt.Errorf("--out is required"))
	}
	if err := outpath.Check("--out", *out); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cfg := synth.FullPaper()
	if *quick {
		cfg = synth.QuickPaper()
	}
	return synth.WritePaper(cfg, *out, log)
}
