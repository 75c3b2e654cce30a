package results

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/train"
	"github.com/meazo-go/meazo/zo"
)

// TestMoments checks the statistics against values worked by hand (and
// scipy.stats.kurtosis's: -1.36 for 1, 2, 3, 4), across slices.
func TestMoments(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	s := Moments([]float32{1, 2}, nil, []float32{3, 4})
	if s.N != 4 || s.Min != 1 || s.Max != 4 || s.Mean != 2.5 || !near(s.Std, math.Sqrt(1.25)) || !near(s.Kurt, 2.5625/1.5625-3) {
		t.Errorf("Moments(1..4) = %+v", s)
	}
	// One large value among many equal ones: a large kurtosis.
	v := make([]float32, 1000)
	for i := range v {
		v[i] = 1
	}
	v[0] = 100
	if s := Moments(v); s.Kurt < 900 {
		t.Errorf("one outlier in 1000: kurtosis %g, want about 995", s.Kurt)
	}
	if s := Moments([]float32{2, 2}); s.Std != 0 || !math.IsNaN(s.Kurt) {
		t.Errorf("no spread: %+v, want std 0 and a NaN kurtosis", s)
	}
	if s := Moments(); s.N != 0 || !math.IsNaN(s.Mean) {
		t.Errorf("nothing: %+v", s)
	}
}

// TestSecondMomentTable reads ZO-Adam's v from a checkpoint's optimizer.bin
// (given as a run directory and as the checkpoint itself), refuses MEAZO's
// with the reason, and says the FO-Adam column needs back-propagation.
func TestSecondMomentTable(t *testing.T) {
	dir := t.TempDir()
	save := func(name string, opt zo.Optimizer) string {
		e, err := zo.New([][]float32{{1, 2}, {3, 4, 5}}, opt, zo.Config{Eps: 1e-3, Q: 1, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := e.Step(zo.Func(func(theta [][]float32) float64 {
				return float64(theta[0][0]*theta[0][0] + 3*theta[1][2]*theta[1][2])
			})); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := e.MarshalBinary()
		run := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(run, "checkpoint"), 0o755)
		if err := os.WriteFile(filepath.Join(run, "checkpoint", "optimizer.bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return run
	}
	adam := zo.NewAdam(0.1)
	run := save("run-zo-adam", adam)
	a, err := ReadSecondMoment(run)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadSecondMoment(filepath.Join(run, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	want := Moments(adam.SecondMoment(0), adam.SecondMoment(1))
	if a.Step != 2 || a.Groups != 2 || a.Stats != want || b.Stats != want || want.Max == 0 {
		t.Errorf("read %+v and %+v, want %+v at step 2", a, b, want)
	}
	table := SecondMomentTable([]SecondMoment{a})
	for _, s := range []string{"| ZO-Adam, ", "(step 2) | FO-Adam |", "| coordinates | 5 in 2 groups | – |", "kurtosis (excess)", "back-propagat"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
	if _, err := ReadSecondMoment(save("run-meazo", zo.NewMEAZO(0.1))); err == nil || !strings.Contains(err.Error(), "one second-moment scalar per group") {
		t.Errorf("MEAZO: %v", err)
	}
	if _, err := ReadSecondMoment(dir); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("no checkpoint: %v", err)
	}
	// A finished run that kept no checkpoint (output.keep_weights) says so.
	pruned := filepath.Join(dir, "pruned")
	if err := os.MkdirAll(pruned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pruned, "summary.json"), []byte(`{"optimizer": "zo-adam", "lr": 0.001, "status": "done", "weights_kept": "best"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecondMoment(pruned); err == nil || !strings.Contains(err.Error(), "the run is done and kept no checkpoint (output.keep_weights: best)") {
		t.Errorf("a run that kept no checkpoint: %v", err)
	}
	// Its best/, last/ or checkpoint/ given: the same, not "give the run or its checkpoint/".
	for _, sub := range []string{"best", "last", "checkpoint"} {
		_, err := ReadSecondMoment(filepath.Join(pruned, sub))
		if err == nil || !strings.Contains(err.Error(), "the run "+pruned+" is done and kept no checkpoint (output.keep_weights: best)") {
			t.Errorf("%s/ of a run that kept no checkpoint: %v", sub, err)
		}
	}
}

// TestSecondMomentFullParameter reads the v of full-parameter ZO-Adam runs
// (one group, and grouped per layer), which optimizer.bin does not hold: the
// checkpoint's optimizer_state.safetensors, checked against its NAME.v
// tensors read here directly. Without that file the error names it; at
// step 0, before the first update made it, v is all zeros.
func TestSecondMomentFullParameter(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(filepath.Join(dir, "demo"), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, grouped := range []bool{false, true} {
		run := filepath.Join(dir, fmt.Sprintf("full-grouped-%v", grouped))
		s, err := train.Run(train.Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"adapter.kind=full",
			"optimizer.name=zo-adam", "optimizer.lr=0.005", "eval.base=false", "task.max_test=8",
			fmt.Sprintf("adapter.grouped=%v", grouped), "output.dir=" + run}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadSecondMoment(run)
		if err != nil {
			t.Fatalf("grouped %v: %v", grouped, err)
		}
		f, err := safetensors.Open(filepath.Join(run, "checkpoint", "optimizer_state.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var vs [][]float32
		for _, info := range f.Tensors() {
			if strings.HasSuffix(info.Name, ".v") {
				v, err := f.Float32(info.Name)
				if err != nil {
					t.Fatal(err)
				}
				vs = append(vs, v)
			}
		}
		f.Close()
		want := Moments(vs...)
		groups := 1
		if grouped {
			groups = 4 // the embeddings, two layers, the final norm
		}
		if got.Step != 3 || got.Steps != 3 || got.Optimizer != "zo-adam" || got.Groups != groups || got.Stats != want ||
			want.N != s.TrainableParams || !(want.Max > want.Min) {
			t.Errorf("grouped %v: read %+v, want %+v of %d parameters in %d groups at step 3", grouped, got, want, s.TrainableParams, groups)
		}
		table := SecondMomentTable([]SecondMoment{got})
		if !strings.Contains(table, fmt.Sprintf("| coordinates | %d in %d group", want.N, groups)) || !strings.Contains(table, "optimizer_state.safetensors") {
			t.Errorf("table:\n%s", table)
		}
	}
	// The same checkpoint without its moments: named, not "0 tensors".
	run := filepath.Join(dir, "full-grouped-false")
	ckpt := filepath.Join(dir, "copy")
	os.MkdirAll(ckpt, 0o755)
	b, err := os.ReadFile(filepath.Join(run, "checkpoint", "optimizer.bin"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ckpt, "optimizer.bin"), b, 0o644)
	if _, err := ReadSecondMoment(ckpt); err == nil || !strings.Contains(err.Error(), "optimizer_state.safetensors: missing") {
		t.Errorf("no optimizer_state.safetensors: %v", err)
	}
	// At step 0 (a stop in step 0's validation) no update has made v: zeros.
	step := len("zo-engine/2")
	for i := range 8 {
		b[step+i] = 0
	}
	os.WriteFile(filepath.Join(ckpt, "optimizer.bin"), b, 0o644)
	got, err := ReadSecondMoment(ckpt)
	if err != nil || got.Step != 0 || got.Stats.N != 102784 || got.Stats.Max != 0 || got.Stats.Min != 0 || got.Stats.Std != 0 {
		t.Errorf("step 0: %+v, %v", got, err)
	}
}
