package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/noise"
)

func writeSpec(t *testing.T, spec string) string {
	p := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type traceLine struct {
	Step int       `json:"step"`
	Loss float64   `json:"loss"`
	D    []float64 `json:"d"`
	V    []float64 `json:"v"`
	X    []float64 `json:"x"`
}

// TestTraceZOSGD checks one ZO-SGD trace step by hand: with groups, the
// grouped estimate perturbs each group alone with its own stream.
func TestTraceZOSGD(t *testing.T) {
	spec := writeSpec(t, `{"h": [2, 8], "x0": [1, -1], "optimizer": "zo-sgd", "lr": 0.01, "eps": 0.001,
		"q": 1, "steps": 2, "seed": 5, "dist": "rademacher", "groups": [[1], [0]]}`)
	var out strings.Builder
	if err := runTrace([]string{"--spec", spec}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var lines []traceLine
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var l traceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	// Group 0 is coordinate 1 (h = 8), group 1 is coordinate 0 (h = 2).
	z := make([]float32, 1)
	x := []float64{1, -1}
	h := []float64{2, 8}
	coord := []int{1, 0}
	for g := range 2 {
		noise.Fill(z, noise.Rademacher, noise.Stream{Seed: noise.StreamSeed(5, g)}, 1)
		i := coord[g]
		xp, xm := float64(float32(x[i]+0.001*float64(z[0]))), float64(float32(x[i]-0.001*float64(z[0])))
		d := (0.5*h[i]*xp*xp - 0.5*h[i]*xm*xm) / 0.002
		if math.Abs(lines[0].D[g]-d) > 1e-9 {
			t.Errorf("d[%d] = %g, want %g", g, lines[0].D[g], d)
		}
		if want := float64(float32(x[i] - 0.01*d*float64(z[0]))); math.Abs(lines[0].X[i]-want) > 1e-7 {
			t.Errorf("x[%d] = %g, want %g", i, lines[0].X[i], want)
		}
	}
	if lines[0].V != nil || lines[0].Step != 0 || lines[1].Step != 1 {
		t.Errorf("v %v steps %d %d", lines[0].V, lines[0].Step, lines[1].Step)
	}
}

func TestTraceMEAZOv(t *testing.T) {
	spec := writeSpec(t, `{"h": [1, 10, 100], "x0": [1, 1, 1], "optimizer": "meazo", "lr": 0.01, "eps": 1e-3,
		"q": 2, "steps": 1, "seed": 1, "groups": [[0], [1, 2]], "beta": 0.9}`)
	var out strings.Builder
	if err := runTrace([]string{"--spec", spec}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var l traceLine
	if err := json.Unmarshal([]byte(out.String()), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.V) != 2 || len(l.D) != 4 {
		t.Fatalf("v %v d %v: want one v per group and q d's per group", l.V, l.D)
	}
	for g := range 2 {
		m := (l.D[2*g] + l.D[2*g+1]) / 2
		if want := 0.1 * m * m; math.Abs(l.V[g]-want) > 1e-12*want {
			t.Errorf("v[%d] = %g, want (1-β)g² = %g", g, l.V[g], want)
		}
	}
}

func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct{ spec, field string }{
		{`{"h": [1], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1}`, `"x0"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "adam", "lr": 1, "eps": 1, "q": 1, "steps": 1}`, `"optimizer"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1, "groups": [[0], [0]]}`, `"groups"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 0, "q": 1, "steps": 1}`, `"eps"`},
		{`{"h": [1, 2], "x0": [1, 2], "optimizer": "meazo", "lr": 1, "eps": 1, "q": 1, "steps": 1, "dist": "x"}`, `"dist"`},
		{`{"h": [1], "x0": [1], "lr": 1, "extra": 3}`, `unknown field`},
	} {
		err := runTrace([]string{"--spec", writeSpec(t, tc.spec)}, &strings.Builder{}, io.Discard)
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
		{[]string{"paper", "-h"}, 0, "", "usage: meazo-synth paper --out DIR [--quick]\n"},
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
	if err := runPaper([]string{"--quick", "--out", dir}, &strings.Builder{}); err != nil {
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

// TestTrackProblem: the tracking problems' eigenvalues survive the rotation
// (trace of H = sum of eigenvalues) and ∇F = Hx agrees with F.
func TestTrackProblem(t *testing.T) {
	q, err := trackProblem(25)
	if err != nil {
		t.Fatal(err)
	}
	var tr, want float64
	for b, idx := range q.blocks {
		for i := range idx {
			tr += q.hb[b][i][i]
		}
		c := math.Pow(10, 3*float64(b)/4)
		want += 5 * c
	}
	if math.Abs(tr-want) > 1e-9*want {
		t.Errorf("trace %g, want %g", tr, want)
	}
	x := make([]float64, 25)
	for i := range x {
		x[i] = math.Sin(float64(i))
	}
	g := make([]float64, 25)
	q.grad(x, g)
	var xg float64
	for i := range x {
		xg += x[i] * g[i]
	}
	if f := q.value(x); math.Abs(2*f-xg) > 1e-9*math.Abs(xg) {
		t.Errorf("F = %g but xᵀHx/2 = %g", f, xg/2)
	}
	if _, err := trackProblem(10); err == nil {
		t.Error("d = 10 accepted")
	}
}

// TestPaperOutNeverInAModel: paper's --out may not be, or lie inside, a model
// directory.
func TestPaperOutNeverInAModel(t *testing.T) {
	model := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		os.WriteFile(filepath.Join(model, f), []byte("{}"), 0o644)
	}
	for _, out := range []string{model, filepath.Join(model, "paper")} {
		err := runPaper([]string{"--quick", "--out", out}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), "the model directory "+model) {
			t.Errorf("--out %s: %v", out, err)
		}
	}
}
