package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFZOORateCommand: fzoo-rate prints ZO-SGD's η (FZOO's over the mean
// σ_t) on its last line, and refuses a run without σ_t.
func TestFZOORateCommand(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"kind":"train","step":1,"loss":0.7,"d":[[1,2]],"groups":[-1],"lr":1e-05,"sigma":[25],"v":null}
{"kind":"train","step":2,"loss":0.6,"d":[[1,2]],"groups":[-1],"lr":1e-05,"sigma":[75],"v":null}
`
	summary := `{"model":"m","task":"sst2","adapter":"full","optimizer":"fzoo","lr":1e-05,"steps":2,"steps_done":2}`
	for name, s := range map[string]string{"metrics.jsonl": metrics, "summary.json": summary} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCmd(t, "fzoo-rate", dir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[len(lines)-1] != "2e-07" || !strings.Contains(out, "mean σ_t 50") {
		t.Errorf("output:\n%s\nwant the mean σ_t 50 and the rate 2e-07 last", out)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "summary.json"), []byte(strings.Replace(summary, "fzoo", "zo-sgd", 1)), 0o644)
	os.WriteFile(filepath.Join(other, "metrics.jsonl"), []byte(metrics), 0o644)
	if _, err := runCmd(t, "fzoo-rate", other); err == nil || !strings.Contains(err.Error(), "not FZOO's") {
		t.Errorf("a ZO-SGD run: %v", err)
	}
}
