// Command meazo-synth runs the zeroth-order optimizers on synthetic quadratics
// with exact function values (package synth holds the experiments):
//
//	meazo-synth trace --spec SPEC.json       one optimizer, one JSON line per step
//	meazo-synth paper --out DIR [--quick]    the paper's Sec. 5.1 / App. C experiments (CSV + SVG)
//
// The subcommands are dispatched by internal/cli like those of the other
// multi-command binaries: -h after one says what it reads and prints, with an
// example, and its flags; exit status 0 done,
// 1 the subcommand failed (the error on one line, as
// 'meazo-synth COMMAND: …'), 2 no or an unknown subcommand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/synth"
)

func main() { newCommands(os.Stderr).Main() }

// newCommands returns meazo-synth's subcommands; log gets paper's progress
// and summary (stderr; a buffer in tests).
func newCommands(log io.Writer) *cli.Set {
	s := cli.New("meazo-synth", "command")
	s.Register("trace", cli.Help{
		Summary:  "one optimizer on a diagonal quadratic from SPEC.json, one JSON line per step",
		Synopsis: "--spec SPEC.json",
		Does: `Runs one zeroth-order optimizer on f(x) = ½ Σ h_i x_i², whose function values are exact, step by step: how an
optimizer behaves on a known curvature, apart from any model (a test's or a notebook's reference).`,
		Reads: synth.SpecHelp,
		Prints: `one JSON line per step: {"step", "loss", "d" (the projected gradients), "v" (MEAZO's
second moment per group; null for the others, whose moments are per coordinate), "x" (the point after the step,
held in float32)}.`,
		Example: "meazo-synth trace --spec spec.json",
	}, func(args []string, _ io.Reader, stdout io.Writer) error {
		return runTrace(s.Flags("trace"), args, stdout)
	})
	s.Register("paper", cli.Help{
		Summary:  "the paper's synthetic experiments (Sec. 5.1, App. C): CSV, SVG and summary.md in --out",
		Synopsis: "--out DIR [--quick]",
		Does: `Runs the paper's synthetic experiments (Sec. 5.1, App. C) on exact quadratics: each optimizer's loss curves and
step-size robustness on ill-conditioned quadratics, and the second-moment tracking runs (v_t against the curvature).`,
		Reads:   "nothing: the quadratics are made from fixed seeds.",
		Prints:  "progress, then the summary, on stderr; in DIR the CSV of every curve and table, the SVG figures and summary.md.",
		Example: "meazo-synth paper --out synth-paper\nmeazo-synth paper --quick --out /tmp/synth",
	}, func(args []string, _ io.Reader, _ io.Writer) error { return runPaper(s.Flags("paper"), args, log) })
	return s
}

// runTrace runs the trace subcommand with its flag set fs: its JSON lines
// go to stdout.
func runTrace(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	specPath := fs.String("spec", "", "SPEC.json")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *specPath == "" {
		return cli.Usage(fmt.Errorf("--spec is required"))
	}
	raw, err := inputfile.ReadFile(*specPath)
	if err != nil {
		return err
	}
	raw = inputfile.TrimBOM(raw) // as the data files allow
	t, err := synth.ParseTrace(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", *specPath, err)
	}
	return t.Run(stdout)
}

// runPaper runs the paper subcommand with its flag set fs: the files go to
// --out; progress and the summary to log.
func runPaper(fs *flag.FlagSet, args []string, log io.Writer) error {
	out := fs.String("out", "", "output directory (created)")
	quick := fs.Bool("quick", false, "small version (3 seeds, 300 steps, 4 rates, d = 9 and 25) for a smoke test")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usage(fmt.Errorf("--out is required"))
	}
	if err := outpath.Check("--out", *out); err != nil {
		return err
	}
	if err := claimOut(*out); err != nil {
		return err
	}
	cfg := synth.FullPaper()
	if *quick {
		cfg = synth.QuickPaper()
	}
	return synth.WritePaper(cfg, *out, log)
}

// synthMarker marks a directory meazo-synth paper made (or found empty):
// a later run replaces its own files there, and nowhere else.
const synthMarker = ".meazo-synth"

// claimOut creates dir, or accepts it when it is empty or holds
// synthMarker; a directory holding anything else is refused, as
// meazo-train and meazo-plot refuse one: the paper's files (summary.md,
// the CSVs and SVGs) would replace files of the same names there.
func claimOut(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case err == nil && len(ents) > 0:
		if _, err := os.Stat(filepath.Join(dir, synthMarker)); err == nil {
			return nil
		}
		return fmt.Errorf("--out %s is not empty and meazo-synth did not make it (no %s): its summary.md, CSV and SVG files would replace files of the same names there; choose a new or empty directory (or, if an older meazo-synth made it, add an empty %s to it)", dir, synthMarker, synthMarker)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, synthMarker), []byte("made by meazo-synth paper: it replaces its own files here\n"), 0o644)
}
