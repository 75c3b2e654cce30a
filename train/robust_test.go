//go:build unix

package train

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputFIFOsAreRefused replaces each input of a run in turn by a named
// pipe (a FIFO, which blocks whoever opens it for reading until a writer
// comes) and checks that the run fails at once naming it, leaving the
// other inputs as they were.
func TestInputFIFOsAreRefused(t *testing.T) {
	src, _ := demoConfig(t, 4)
	for _, input := range []string{"demo.yaml", "model/config.json", "model/model.safetensors", "model/tokenizer.json",
		"model/tokenizer_config.json", "data/train.tsv", "data/dev.tsv", "init/adapter_config.json"} {
		t.Run(input, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			writeInitAdapter(t, dir)
			fifo := filepath.Join(dir, input)
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			before := readTree(t, dir)
			set := append([]string{"model.path=" + filepath.Join(dir, "model"), "task.train=" + filepath.Join(dir, "data/train.tsv"),
				"task.test=" + filepath.Join(dir, "data/dev.tsv"), "output.dir=" + filepath.Join(dir, "run")}, trustSet...)
			switch input {
			case "init/adapter_config.json":
				set = append(set, "adapter.init="+filepath.Join(dir, "init"), "adapter.r=8")
			case "data/dev.tsv": // the test split, read at the end
				set = append(set, "eval.skip=false")
			}
			done := make(chan error, 1)
			go func() {
				_, err := Run(Options{ConfigPath: filepath.Join(dir, "demo.yaml"), Overrides: set, Log: io.Discard})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "named pipe") {
					t.Errorf("error %v, want one naming %s as a named pipe", err, fifo)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the run blocked on %s", fifo)
			}
			after := readTree(t, dir)
			for name, content := range before {
				if after[name] != content {
					t.Errorf("%s changed", name)
				}
			}
		})
	}
}

// writeInitAdapter saves a LoRA adapter (r 8, the demo's shape) into dir/init.
func writeInitAdapter(t *testing.T, dir string) {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	set := append([]string{"model.path=" + filepath.Join(dir, "model"), "task.train=" + filepath.Join(dir, "data/train.tsv"),
		"task.test=" + filepath.Join(dir, "data/dev.tsv"), "output.dir=" + run, "train.steps=1"}, trustSet...)
	if _, err := Run(Options{ConfigPath: filepath.Join(dir, "demo.yaml"), Overrides: set, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	copyDir(t, filepath.Join(run, "last"), filepath.Join(dir, "init"))
}

// readTree reads every regular file under dir (named relative to it).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
