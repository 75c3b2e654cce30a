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
		{"model", false, "is a model directory already"},
		{"link/out.safetensors", false, "is inside the model directory"},
		{"run/best/x.json", false, "is inside the run directory"},
		{"run/plots", false, "is inside the run directory"},
		{"old/figs", false, "is inside the run directory"},
		{"run", false, "is a run directory already"},
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

// TestCheckFile: an output file is written by a rename over its path, which
// would replace a device or a link (/dev/stdout, to a device or to a file)
// instead of writing into it: each is refused, as a directory is, naming
// the flag; a new or a regular file passes, and Check's rules still hold.
func TestCheckFile(t *testing.T) {
	root := t.TempDir()
	regular := filepath.Join(root, "old.jsonl")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	devLink, fileLink, dirLink := filepath.Join(root, "stdout"), filepath.Join(root, "new-link"), filepath.Join(root, "dir-link")
	if err := os.Symlink(os.DevNull, devLink); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	os.Symlink(regular, fileLink)
	os.Symlink(root, dirLink)
	for _, c := range []struct{ out, want string }{
		{filepath.Join(root, "new.jsonl"), ""},
		{regular, ""},
		{root, "is a directory; name a file"},
		{devLink, "is a symbolic link"},
		{fileLink, "is a symbolic link"},
		{dirLink, "is a directory; name a file"},
		{os.DevNull, "is not a regular file"},
		{regular, "is the input"}, // with the input below
	} {
		var inputs []string
		if c.want == "is the input" {
			inputs = []string{regular}
		}
		err := CheckFile("--out", c.out, inputs...)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--out "+c.out)) {
			t.Errorf("%s: %v, want %q", c.out, err, c.want)
		}
	}
	if target, err := os.Readlink(devLink); err != nil || target != os.DevNull {
		t.Errorf("the link became %q (%v)", target, err)
	}
}
