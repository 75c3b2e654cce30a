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
}
