package rundir

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lines keep the key order they have always been written in.
func TestLineKeyOrder(t *testing.T) {
	b, err := json.Marshal(TrainLine{Kind: KindTrain, Step: 1, Groups: []int{0}, D: [][]float64{{2}}, Losses: []float64{1, 3}, Loss: 2, LR: 0.5, UpdateNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"d":[[2]],"groups":[0],"kind":"train","loss":2,"losses":[1,3],"lr":0.5,"step":1,"update_norm":1,"v":null}`; string(b) != want {
		t.Errorf("train line %s, want %s", b, want)
	}
	b, _ = json.Marshal(ValLine{Kind: KindVal, Step: 3, ValLoss: 1.5})
	if want := `{"kind":"val","step":3,"val_loss":1.5}`; string(b) != want {
		t.Errorf("val line %s, want %s", b, want)
	}
	b, _ = json.Marshal(ValLine{Kind: KindVal, Step: 3, ValLoss: 1.5, ValMetrics: map[string]float64{"f1": 70.5, "exact_match": 60}})
	if want := `{"kind":"val","step":3,"val_loss":1.5,"val_metrics":{"exact_match":60,"f1":70.5}}`; string(b) != want {
		t.Errorf("val line with its metric %s, want %s", b, want)
	}
}

func TestReadMetrics(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"kind":"val","step":0,"val_loss":2}
{"kind":"train","step":1,"loss":null,"v":[1,null]}
{"kind":"train","step":1,"loss":3}
{"kind":"other","step":1}
{"kind":"train","st`)
	var warned []string
	tp, vp, err := ReadMetrics(dir, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(tp) != 1 || tp[0].Loss != 3 || tp[0].V != nil || len(vp) != 1 || vp[0].ValLoss != 2 || len(warned) != 1 {
		t.Errorf("got %+v %+v, warnings %q", tp, vp, warned)
	}
	// A validation's metric (eval.validation_metrics) is read; absent, none.
	write(`{"kind":"val","step":0,"val_loss":2,"val_metrics":{"accuracy":0.5,"f1":null}}` + "\n" + `{"kind":"val","step":2,"val_loss":1}` + "\n")
	if _, vp, err := ReadMetrics(dir, nil); err != nil || len(vp) != 2 || vp[0].Metrics["accuracy"] != 0.5 || !math.IsNaN(vp[0].Metrics["f1"]) || vp[1].Metrics != nil {
		t.Errorf("got %+v, %v; want step 0's metrics (NaN for null) and none at step 2", vp, err)
	}
	write("{\"kind\":\"train\",\"step\":1,\"loss\":null,\"v\":[1,null]}\n{\"kind\":\"train\"}\n")
	if _, _, err := ReadMetrics(dir, nil); err == nil || !strings.Contains(err.Error(), MetricsFile+" line 2: ") {
		t.Errorf("error %v, want one naming line 2", err)
	}
	write("{\"kind\":\"train\",\"step\":1,\"loss\":null,\"v\":[1,null]}\n")
	if tp, _, err := ReadMetrics(dir, nil); err != nil || !math.IsNaN(tp[0].Loss) || !math.IsNaN(tp[0].V[1]) {
		t.Errorf("got %+v, %v; want NaN for nulls", tp, err)
	}
}

func TestReadSummary(t *testing.T) {
	dir := t.TempDir()
	want := Summary{Optimizer: "meazo", LR: 1e-3, Seed: math.MaxUint64, Steps: 2, StepsDone: 2, Status: StatusDone}
	b, _ := json.MarshalIndent(want, "", "  ")
	os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644)
	got, err := ReadSummary(dir)
	if err != nil || got.Seed != want.Seed || !got.Finished() || got.Interrupted() {
		t.Errorf("got %+v, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte(`{"optimizer":"meazo","lr":0}`), 0o644)
	if _, err := ReadSummary(dir); err == nil || !strings.Contains(err.Error(), `field "lr" is 0`) {
		t.Errorf("error %v", err)
	}
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte(`{"optimizer":"meazo","lr":1,"weights_kept":"last"}`), 0o644)
	if _, err := ReadSummary(dir); err == nil || !strings.Contains(err.Error(), `field "weights_kept" is "last", want "best" or "none" (or no field: all)`) {
		t.Errorf("error %v", err)
	}
}

// TestFirstForeign: a run's own files, in its folders too, and the
// temporary files of its interrupted writes are not foreign; anything else
// is, and so is a link or a file where a folder belongs.
func TestFirstForeign(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string // created under the run directory
		also  []string
		want  string // the foreign path, relative to the run directory; "" = none
	}{
		{"empty", nil, nil, ""},
		{"a run", []string{ConfigFile, MetricsFile, LockFile, "checkpoint/state.json", "checkpoint/best/adapter_config.json", "best/adapter_model.safetensors"}, nil, ""},
		{"leftovers", []string{".summary.json.tmp-3", "last/.adapter_config.json.tmp4", "checkpoint.tmp/.state.json.tmp12"}, nil, ""},
		{"a marker allowed", []string{DemoMarker, ConfigFile}, []string{DemoMarker}, ""},
		{"a marker not allowed", []string{DemoMarker}, nil, DemoMarker},
		{"a user's file", []string{ConfigFile, "notes.txt"}, nil, "notes.txt"},
		{"a user's file in best/", []string{"best/adapter_config.json", "best/my_notes.txt"}, nil, "best/my_notes.txt"},
		{"a user's folder in checkpoint/", []string{"checkpoint/mine/x"}, nil, "checkpoint/mine"},
		{"a file where a folder belongs", []string{BestDir}, nil, BestDir},
		{"a folder where a file belongs", []string{ConfigFile + "/x"}, nil, ConfigFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := ""
			if tc.want != "" {
				want = filepath.Join(dir, tc.want)
			}
			if got, err := FirstForeign(dir, tc.also...); err != nil || got != want {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	t.Run("a link", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), filepath.Join(dir, MetricsFile)); err != nil {
			t.Fatal(err)
		}
		if got, err := FirstForeign(dir); err != nil || got != filepath.Join(dir, MetricsFile) {
			t.Errorf("got %q, %v; want the link", got, err)
		}
	})
}

// TestOfRun: a run's best/, last/, checkpoint/ and checkpoint/best/ are
// known as the run's; a directory of those names elsewhere (the checkpoint's
// config.yaml does not make it a run) is not.
func TestOfRun(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	for _, d := range []string{"best", "last", "checkpoint/best", "other/best"} {
		if err := os.MkdirAll(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(run, MetricsFile), nil, 0o644)
	os.WriteFile(filepath.Join(run, CheckpointDir, ConfigFile), nil, 0o644)
	for _, c := range []struct{ dir, run, what string }{
		{filepath.Join(run, "best"), run, "best/"},
		{filepath.Join(run, "last") + "/", run, "last/"},
		{filepath.Join(run, "checkpoint"), run, "checkpoint/"},
		{filepath.Join(run, "checkpoint", "best"), run, "checkpoint/best/"},
		{run, "", ""},
		{filepath.Join(run, "other", "best"), "", ""},
		{filepath.Join(root, "best"), "", ""},
	} {
		if r, w := OfRun(c.dir); r != c.run || w != c.what {
			t.Errorf("OfRun(%s) = %q, %q, want %q, %q", c.dir, r, w, c.run, c.what)
		}
	}
}
