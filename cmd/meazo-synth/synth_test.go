package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSpec(t *testing.T, spec string) string {
	p := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct{ spec, field string }{
		{`{"h": [1], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1}`, `"x0"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "adam", "lr": 1, "eps": 1, "q": 1, "steps": 1}`, `"optimizer"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1, "groups": [[0], [0]]}`, `"groups"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 0, "q": 1, "steps": 1}`, `"eps"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1, "dist": "x"}`, `"dist"`},
		{`{"h": [1], "x0": [1], "lr": 1, "extra": 3}`, `unknown field`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1}`, `"steps": missing`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "steps": 0}`, `"steps": must be at least 1`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "eps": 1, "steps": 2}`, `"lr": missing`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": -1, "eps": 1, "steps": 2}`, `"lr": must be finite`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "zo-adam", "lr": 1, "eps": 1, "steps": 2, "beta": 0.5}`, `"beta": zo-adam has no beta`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "fzoo", "q": 2, "lr": 1, "eps": 1, "steps": 2, "beta1": 0.5}`, `"beta1": fzoo has no beta1`},
	} {
		err := newCommands(io.Discard).Run("trace", []string{"--spec", writeSpec(t, tc.spec)}, nil, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "spec.json") {
			t.Errorf("spec %s: error %v, want one naming %s and the file", tc.spec, err, tc.field)
		}
	}
}

// TestCommandLine runs meazo-synth's command lines as main does and checks
// the exit status, the output, and the error on one line after the
// program's and the subcommand's names.
func TestCommandLine(t *testing.T) {
	spec := writeSpec(t, `{"h": [2, 8], "x0": [1, -1], "optimizer": "zo-sgd", "lr": 0.01, "eps": 0.001, "q": 1, "steps": 2}`)
	for _, tc := range []struct {
		args           []string
		status         int
		stdout, stderr string // contained in each
	}{
		{[]string{}, 2, "", "usage: meazo-synth <command> [flags]"},
		{[]string{"-h"}, 0, "", "  trace "},
		{[]string{"frobnicate"}, 2, "", "meazo-synth: unknown command \"frobnicate\"\n"},
		{[]string{"trace"}, 2, "", "meazo-synth trace: --spec is required\n"},
		{[]string{"trace", "-h"}, 0, "", "usage: meazo-synth trace --spec SPEC.json\n"},
		{[]string{"trace", "-x"}, 2, "", "meazo-synth trace: flag provided but not defined: -x\n"},
		{[]string{"trace", "--spec", filepath.Join(t.TempDir(), "missing.json")}, 1, "", "missing.json: no such file"},
		{[]string{"trace", "--spec", spec}, 0, `{"step":1,`, ""},
		{[]string{"trace", "--spec", writeSpec(t, `{"h": [2], "x0": [1], "optimizer": "zo-sgd", "lr": 0.01, "eps": 0.001, "q": 1, "steps": 2} trailing`)}, 1, "",
			"more after the spec's JSON object"},
		{[]string{"paper"}, 2, "", "meazo-synth paper: --out is required\n"},
		{[]string{"paper", "stray"}, 2, "", "meazo-synth paper: unexpected argument \"stray\" (flags only)\n"},
		{[]string{"trace", "stray"}, 2, "", "meazo-synth trace: unexpected argument \"stray\" (flags only)\n"},
		{[]string{"paper", "-h"}, 0, "", "usage: meazo-synth paper --out DIR [--quick]\n"},
		{[]string{"trace", "-h"}, 0, "", "\nReads:    SPEC.json (--spec): one JSON object:\n            h          the diagonal of the Hessian"},
	} {
		var stdout, stderr bytes.Buffer
		status := newCommands(&stderr).Exec(tc.args, nil, &stdout, &stderr)
		if status != tc.status || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: status %d, stdout:\n%s\nstderr:\n%s\nwant status %d, stdout with %q, stderr with %q",
				tc.args, status, stdout.String(), stderr.String(), tc.status, tc.stdout, tc.stderr)
		}
	}
}

// TestPaperQuick runs the small version of the experiments end to end and
// checks that every output exists and is non-trivial.
func TestPaperQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	if err := newCommands(io.Discard).Run("paper", []string{"--quick", "--out", dir}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"summary.md", "quad_robustness.csv", "quad_heterogeneous_bcgd_curves.csv",
		"quad_heterogeneous_bcgd_curves.svg", "quad_homogeneous_gd_robustness.svg", "vtrack_d9.csv", "vtrack_d25.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) < 200 {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
}

// TestPaperOutNeverInAModel: paper's --out may not be, or lie inside, a model
// directory.
func TestPaperOutNeverInAModel(t *testing.T) {
	model := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		os.WriteFile(filepath.Join(model, f), []byte("{}"), 0o644)
	}
	for out, want := range map[string]string{
		model:                         "is a model directory already",
		filepath.Join(model, "paper"): "is inside the model directory " + model,
	} {
		err := newCommands(io.Discard).Run("paper", []string{"--quick", "--out", out}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--out %s: %v, want %q", out, err, want)
		}
	}
}

// TestHelp: every command's -h says what it does, what it reads, what it
// prints and an example (cli.CheckHelp).
func TestHelp(t *testing.T) {
	if err := newCommands(io.Discard).CheckHelp(); err != nil {
		t.Fatal(err)
	}
}

// paper --out takes a new or empty directory, or one it made before (its
// marker), and refuses one holding the user's files, which its summary.md,
// CSV and SVG files would replace.
func TestPaperOutClaimed(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "summary.md"), []byte("my notes"), 0o644)
	if err := claimOut(mine); err == nil {
		t.Error("a directory of the user's files was taken")
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "summary.md")); string(b) != "my notes" {
		t.Errorf("summary.md became %q", b)
	}
	made := filepath.Join(dir, "made")
	if err := claimOut(made); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(made, "summary.md"), []byte("paper"), 0o644)
	if err := claimOut(made); err != nil {
		t.Errorf("its own directory again: %v", err)
	}
}
