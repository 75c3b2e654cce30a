package results

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/sweep"
)

// TestCurvesDrawTheValidationMetric: runs whose validations logged the
// task's metric (eval.validation_metrics) get a figure of each metric
// beside the validation loss, a band over seeds per method as the loss
// has; runs without it get only the loss figures, and a metric whose name
// would not make a plain file name is not drawn, nor one named loss (a
// hand-edited file), which would take val_loss.svg's place; accuracy,
// logged in 0–1, is drawn in %, as the test accuracy's figure draws it.
func TestCurvesDrawTheValidationMetric(t *testing.T) {
	root := t.TempDir()
	write := func(name, val string) sweep.Run {
		r := run("meazo", false, 1e-3, uint64(len(name)), 1.0, false)
		r.Dir, r.StepsDone = filepath.Join(root, name), 2
		os.MkdirAll(r.Dir, 0o755)
		lines := `{"kind":"train","step":1,"loss":2,"groups":[-1],"v":[0.1]}` + "\n" + `{"kind":"train","step":2,"loss":1.5,"groups":[-1],"v":[0.1]}` + "\n" + val
		if err := os.WriteFile(filepath.Join(r.Dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		return r
	}
	files := func(figs []Figure) []string {
		var s []string
		for _, f := range figs {
			s = append(s, f.File)
		}
		return s
	}
	off := write("off", `{"kind":"val","step":0,"val_loss":1.5}`+"\n"+`{"kind":"val","step":2,"val_loss":1.4}`+"\n")
	figs, err := Curves([]sweep.Run{off}, 1, func(w string) { t.Log(w) })
	if err != nil || !slices.Equal(files(figs), []string{"train_loss.svg", "val_loss.svg"}) {
		t.Fatalf("runs without validation metrics: %v, %v", files(figs), err)
	}
	a := write("a", `{"kind":"val","step":0,"val_loss":1.5,"val_metrics":{"f1":40,"exact_match":30,"../x":1}}`+"\n"+`{"kind":"val","step":2,"val_loss":1.4,"val_metrics":{"f1":50,"exact_match":35,"../x":1}}`+"\n")
	b := write("bb", `{"kind":"val","step":0,"val_loss":1.5,"val_metrics":{"f1":44,"exact_match":30,"../x":1}}`+"\n"+`{"kind":"val","step":2,"val_loss":1.3,"val_metrics":{"f1":60,"exact_match":45,"../x":1}}`+"\n")
	figs, err = Curves([]sweep.Run{a, b}, 1, func(w string) { t.Log(w) })
	if want := []string{"train_loss.svg", "val_loss.svg", "val_exact_match.svg", "val_f1.svg"}; err != nil || !slices.Equal(files(figs), want) {
		t.Fatalf("runs with validation metrics: %v, %v; want %v", files(figs), err, want)
	}
	f1 := figs[3]
	if len(f1.Series) != 1 || !slices.Equal(f1.Series[0].X, []float64{0, 2}) || !slices.Equal(f1.Series[0].Y, []float64{42, 55}) || f1.YLabel != "validation f1" {
		t.Errorf("val_f1.svg: %+v, want the mean of the 2 seeds, 42 at step 0 and 55 at step 2", f1.Series)
	}
	// Accuracy (logged in 0–1) is drawn in %, as the test accuracy's
	// figure draws it; a metric named loss (a hand-edited file) does not
	// take val_loss.svg's place.
	c := write("c", `{"kind":"val","step":0,"val_loss":1.5,"val_metrics":{"accuracy":0.5,"loss":9}}`+"\n"+`{"kind":"val","step":2,"val_loss":1.25,"val_metrics":{"accuracy":0.75,"loss":9}}`+"\n")
	figs, err = Curves([]sweep.Run{c}, 1, func(w string) { t.Log(w) })
	if want := []string{"train_loss.svg", "val_loss.svg", "val_accuracy.svg"}; err != nil || !slices.Equal(files(figs), want) {
		t.Fatalf("runs with accuracy and a metric named loss: %v, %v; want %v", files(figs), err, want)
	}
	if val := figs[1]; val.YLabel != "validation loss" || !slices.Equal(val.Series[0].Y, []float64{1.5, 1.25}) {
		t.Errorf("val_loss.svg: %s, %v; want the validation loss", val.YLabel, val.Series[0].Y)
	}
	if acc := figs[2]; acc.YLabel != "validation accuracy (%)" || !slices.Equal(acc.Series[0].Y, []float64{50, 75}) {
		t.Errorf("val_accuracy.svg: %s, %v; want 50 and 75 %%", acc.YLabel, acc.Series[0].Y)
	}
}

// TestStudyCellShowsTheValidationMetric: without a test evaluation
// (eval.skip) a study's cell is the task's metric on the validation split
// at the best step where the runs logged it (best_val_metrics, on the test
// metric's scale: accuracy in %), labelled as validation and higher is
// better, not the best validation loss; runs without it keep the loss, and
// runs with a test result keep that.
func TestStudyCellShowsTheValidationMetric(t *testing.T) {
	at := func(test, val map[string]float64, loss float64) sweep.Run {
		r := run("meazo", false, 1e-3, 0, loss, false)
		r.Task, r.BestValMetrics = "sst2", val
		r.Test = map[string]map[string]float64{}
		if test != nil {
			r.Test["best"] = test
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		runs   []sweep.Run
		metric string
		mean   float64
	}{
		{"validation metric", []sweep.Run{at(nil, map[string]float64{"accuracy": 0.9}, 1), at(nil, map[string]float64{"accuracy": 0.8}, 2)},
			"validation accuracy (%) of the best adapter", 85},
		{"loss", []sweep.Run{at(nil, nil, 1), at(nil, nil, 2)}, lossMetric, 1.5},
		{"test", []sweep.Run{at(map[string]float64{"accuracy": 0.7}, map[string]float64{"accuracy": 0.9}, 1)}, "accuracy (%) of the best adapter", 70},
	} {
		c := cell{task: "sst2", adapter: "lora", eta: 1e-3, seeds: len(tc.runs)}
		c.score(tc.runs)
		if c.metric != tc.metric || math.Abs(c.mean-tc.mean) > 1e-9 || c.n != len(tc.runs) {
			t.Errorf("%s: metric %q, mean %v over %d; want %q, %v over %d", tc.name, c.metric, c.mean, c.n, tc.metric, tc.mean, len(tc.runs))
		}
		if want := "higher is better"; tc.metric != lossMetric && direction(c.metric) != want {
			t.Errorf("%s: %s", tc.name, direction(c.metric))
		}
	}
}
