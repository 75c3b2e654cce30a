package train

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
)

// TestKeepWeights: a finished run keeps the weight directories
// output.keep_weights names and no others, records it in summary.json and
// says so; the best/ it keeps loads; a resume of it, or a new run in its
// directory, is refused naming why. A diverged run prunes as a finished one;
// keep_weights all leaves everything.
func TestKeepWeights(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	for _, c := range []struct {
		name, kind, keep string
		set              []string
		status           string
		kept, gone       []string
	}{
		{"full-best", "full", "best", nil, "done", []string{"best"}, []string{"checkpoint", "last"}},
		{"full-none", "full", "none", nil, "done", nil, []string{"checkpoint", "last", "best"}},
		{"full-all", "full", "all", nil, "done", []string{"checkpoint", "best", "last"}, nil},
		{"lora-best", "lora", "best", nil, "done", []string{"best"}, []string{"checkpoint", "last"}},
		{"diverged-best", "lora", "best", []string{"optimizer.name=zo-sgd", "optimizer.lr=1e30"}, "diverged", []string{"best"}, []string{"checkpoint"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name)
			var log syncBuilder
			_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: append([]string{"output.dir=" + out, "task.max_validation=8",
				"task.max_test=8", "eval.batch_size=8", "model.backend=cpu", "adapter.kind=" + c.kind, "output.keep_weights=" + c.keep}, c.set...)})
			if err != nil {
				t.Fatal(err)
			}
			s, err := rundir.ReadSummary(out)
			if err != nil {
				t.Fatal(err)
			}
			wantKept := c.keep
			if c.keep == "all" {
				wantKept = ""
			}
			if s.Status != c.status || s.WeightsKept != wantKept {
				t.Errorf("summary: status %q, weights_kept %q; want %q, %q", s.Status, s.WeightsKept, c.status, wantKept)
			}
			for _, d := range c.kept {
				if _, err := os.Stat(filepath.Join(out, d)); err != nil {
					t.Errorf("%s/ is not kept: %v", d, err)
				}
			}
			for _, d := range append(c.gone, "checkpoint.tmp", "checkpoint.old") {
				if _, err := os.Lstat(filepath.Join(out, d)); err == nil {
					t.Errorf("%s/ is kept with output.keep_weights %s", d, c.keep)
				}
			}
			got := log.String()
			if len(c.gone) > 0 && !strings.Contains(got, "(output.keep_weights: "+c.keep+")") {
				t.Errorf("the log does not say what was removed:\n%s", got)
			}
			if c.kind == "full" && c.keep == "best" {
				if _, err := model.Load(filepath.Join(out, "best")); err != nil {
					t.Fatalf("the best/ kept does not load: %v", err)
				}
			}
			if c.keep == "all" {
				return
			}
			_, err = Run(Options{Resume: out, Overrides: []string{"train.steps=4"}, Log: io.Discard})
			if err == nil || !strings.Contains(err.Error(), "no checkpoint (output.keep_weights: "+c.keep+"): it cannot go on") {
				t.Errorf("resume with more steps: %v; want a refusal naming output.keep_weights", err)
			}
			_, err = Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"output.dir=" + out, "model.backend=cpu"}})
			if err == nil || !strings.Contains(err.Error(), "holds a finished run") {
				t.Errorf("a new run in its directory: %v; want a refusal naming the finished run", err)
			}
		})
	}
}

func TestKeepWeightsValues(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	_, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"output.keep_weights=last"}})
	if err == nil || !strings.Contains(err.Error(), `output.keep_weights: must be all, best or none, got "last"`) {
		t.Errorf("output.keep_weights=last: %v", err)
	}
}

// TestDivergedKeepsSaysCheckpointDiverged: a full-parameter run whose
// pending validation (a stop cut it short, and the checkpoint then holds
// the step's weights) finds them diverged says that the checkpoint holds
// the diverged weights and a resume cannot help; a run that diverged in a
// step keeps an earlier checkpoint and says nothing of the kind.
func TestDivergedKeepsSaysCheckpointDiverged(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, rundir.CheckpointDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.CheckpointDir, rundir.StateFile), []byte(`{"step": 6}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step    int
		pending bool
		says    bool
	}{{6, true, true}, {8, false, false}} {
		r := &run{dir: dir, cfg: &Config{Adapter: AdapterConfig{Kind: "full"}}, state: checkpointState{Step: tc.step, BestStep: 2, ValidationPending: tc.pending}}
		got := r.divergedKeeps()
		if says := strings.Contains(got, "that checkpoint holds the weights that diverged"); says != tc.says || !strings.Contains(got, "the last checkpoint (step 6)") {
			t.Errorf("step %d, pending %v: %q", tc.step, tc.pending, got)
		}
	}
}
