package outpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(p string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in := write("data/preds.jsonl")
	write("model/config.json")
	write("model/model.safetensors")
	write("run/run.lock")
	write("old/summary.json")
	write("old/config.yaml")
	write("run/best/adapter_config.json")
	if err := os.Symlink(filepath.Join(root, "model"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out    string
		ownRun bool
		want   string
	}{
		{"scores.jsonl", false, ""},
		{"data/scores.jsonl", false, ""},
		{"data/preds.jsonl", false, "is the input"},
		{"data/./../data/preds.jsonl", false, "is the input"},
		{"model/model.safetensors", false, "is inside the model directory"},
		{"model", false, "is the model directory"},
		{"link/out.safetensors", false, "is inside the model directory"},
		{"run/best/x.json", false, "is inside the run directory"},
		{"run/plots", false, "is inside the run directory"},
		{"old/figs", false, "is inside the run directory"},
		{"run", false, "is the run directory"},
		{"run", true, ""},
		{"run/sub", true, "is inside the run directory"},
		{"runs/new", true, ""},
	} {
		err := check("--out", filepath.Join(root, c.out), c.ownRun, []string{in, ""})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--out")) {
			t.Errorf("%s (own run %v): %v, want %q", c.out, c.ownRun, err, c.want)
		}
	}
	// A directory input holds what is read: nothing may be written into it.
	if err := Check("--out", filepath.Join(root, "data", "new.json"), filepath.Join(root, "data")); err == nil || !strings.Contains(err.Error(), "is inside the input") {
		t.Errorf("inside a directory input: %v", err)
	}
}
