package synth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/noise"
)

// runSpec runs a trace from its spec and returns its output.
func runSpec(t *testing.T, spec string) *strings.Builder {
	t.Helper()
	tr, err := ParseTrace([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tr.Run(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestTraceZOSGD checks one ZO-SGD trace step by hand: with groups, the
// grouped estimate perturbs each group alone with its own stream.
func TestTraceZOSGD(t *testing.T) {
	out := runSpec(t, `{"h": [2, 8], "x0": [1, -1], "optimizer": "zo-sgd", "lr": 0.01, "eps": 0.001,
		"q": 1, "steps": 2, "seed": 5, "dist": "rademacher", "groups": [[1], [0]]}`)
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
	out := runSpec(t, `{"h": [1, 10, 100], "x0": [1, 1, 1], "optimizer": "meazo", "lr": 0.01, "eps": 1e-3,
		"q": 2, "steps": 1, "seed": 1, "groups": [[0], [1, 2]], "beta": 0.9}`)
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

// TestWritePaperReproducible runs the small version of the experiments with
// one thread and with several: the files are the same bytes, and each is
// there and not trivial.
func TestWritePaperReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		err := WritePaper(QuickPaper(), dirs[i], io.Discard)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	// summary.md, the robustness CSV, 2 problems × 2 schemes × 3 files,
	// 2 dimensions × 2 files.
	if len(ents) != 18 {
		t.Errorf("%d files, want 18", len(ents))
	}
	for _, e := range ents {
		a, _ := os.ReadFile(filepath.Join(dirs[0], e.Name()))
		b, err := os.ReadFile(filepath.Join(dirs[1], e.Name()))
		if err != nil || !bytes.Equal(a, b) || len(a) < 200 {
			t.Errorf("%s: %d bytes with 1 thread, %d with 4 (%v): want the same bytes, not trivial", e.Name(), len(a), len(b), err)
		}
	}
}

// TestTraceKeepsLinesOfAFailedRun: a trace whose point overflows at some
// step writes the lines of the steps before it, then says after how many
// steps it failed (the buffered lines were lost).
func TestTraceKeepsLinesOfAFailedRun(t *testing.T) {
	tr, err := ParseTrace([]byte(`{"h": [1e300], "x0": [1], "optimizer": "zo-sgd", "lr": 1e-299, "eps": 0.5, "steps": 50, "seed": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = tr.Run(&out)
	lines := strings.Count(out.String(), "\n")
	if err == nil || lines == 0 || !strings.Contains(err.Error(), fmt.Sprintf("after %d of 50 steps", lines)) {
		t.Errorf("error %v with %d lines written; want the lines of the steps before the failure and their count in the error", err, lines)
	}
}
