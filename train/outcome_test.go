package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meazo-go/meazo/tensor"
)

// TestOutcomes ends a run in each of the five ways a step can end it and
// checks what finish makes of each: the error, the summary Run returns,
// summary.json's status (none for a failed run, whose error says what is
// kept, nor for StopAfter's pause) and the log's last line.
// cmd/meazo-train's TestExitStatuses checks the exit status of each.
func TestOutcomes(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=2", "train.checkpoint_every=2", "eval.skip=true", "task.max_train=64", "task.max_validation=8"}
	failAt := func(n int64) func(tensor.Backend) tensor.Backend {
		var products atomic.Int64
		return func(b tensor.Backend) tensor.Backend { return failingBackend{b, &products, n} }
	}
	polls := 0
	cases := []struct {
		name     string
		opts     Options
		set      []string
		status   string // of the returned summary and summary.json; "-": no summary.json
		err      string // "" = none
		lastLine string
	}{
		{name: "finished", status: "done", lastLine: "results in "},
		{name: "stop after", opts: Options{StopAfter: 2}, status: "-", lastLine: "stopped after 2 steps as asked (resume with --resume "},
		{name: "interrupted", opts: Options{Stop: stopAt(setupPolls+3, &polls)}, status: "interrupted",
			lastLine: "interrupted by SIGUSR1 after step 1 of 4; checkpoint written: continue with --resume "},
		{name: "diverged", set: []string{"optimizer.name=zo-sgd", "optimizer.lr=1e30"}, status: "diverged", lastLine: "diverged at step 2: "},
		{name: "failed", opts: Options{wrapBackend: failAt(1)}, status: "-",
			err: "validation at step 0: injected device failure; no checkpoint was written yet: start the run again with the settings it started with: --config " +
				filepath.Join(dir, "failed", "config.yaml") + " --out " + filepath.Join(dir, "failed"), lastLine: "validation of step 0: 8 examples"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			var log strings.Builder
			opts := tc.opts
			opts.ConfigPath, opts.Log = cfg, &log
			opts.Overrides = append(append(slices.Clone(set), tc.set...), "output.dir="+out)
			s, err := Run(opts)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			switch {
			case tc.err != "" && s != nil:
				t.Errorf("a failed run returned a summary: %+v", s)
			case tc.err == "" && tc.status == "-" && (s == nil || s.Status != ""):
				t.Errorf("returned summary %+v, want one without a status", s)
			case tc.err == "" && tc.status != "-" && (s == nil || s.Status != tc.status):
				t.Errorf("returned summary %+v, want status %q", s, tc.status)
			}
			if tc.status == "-" {
				if _, err := os.Stat(filepath.Join(out, "summary.json")); !os.IsNotExist(err) {
					t.Errorf("summary.json is there (%v)", err)
				}
			} else if got := readSummary(t, out); got.Status != tc.status {
				t.Errorf("summary.json: status %q, want %q", got.Status, tc.status)
			}
			lines := strings.Split(strings.TrimRight(log.String(), "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tc.lastLine) {
				t.Errorf("the log's last line is %q, want it to begin %q", last, tc.lastLine)
			}
		})
	}
}
