package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestCopyFiles copies a real tokenizer that then loads and encodes as the
// original, and refuses to write over a tokenizer file, copying nothing.
func TestCopyFiles(t *testing.T) {
	from := fixture.Dir(t, "fixtures", "tokenizers", "qwen3")
	to := filepath.Join(t.TempDir(), "m")
	if _, err := CopyFiles(from, to); err != nil {
		t.Fatal(err)
	}
	a, err := Load(from)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(to)
	if err != nil {
		t.Fatalf("the copy does not load: %v", err)
	}
	const s = "Héllo, wörld! 123"
	if x, y := a.Encode(s, false), b.Encode(s, false); len(x) == 0 || !slices.Equal(x, y) {
		t.Errorf("the copy encodes %q as %v, the original as %v", s, y, x)
	}
	// A second copy would write over the first: refused.
	other := filepath.Join(t.TempDir(), "n")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "tokenizer_config.json"), []byte("{}"), 0o644)
	if _, err := CopyFiles(from, other); err == nil || !strings.Contains(err.Error(), "already holds tokenizer_config.json") {
		t.Errorf("copy onto an existing tokenizer_config.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "tokenizer.json")); err == nil {
		t.Error("a refused copy wrote tokenizer.json")
	}
	// A directory without a tokenizer: Load's error, nothing made.
	x := filepath.Join(t.TempDir(), "x")
	if _, err := CopyFiles(t.TempDir(), x); err == nil {
		t.Error("copied from a directory without a tokenizer")
	}
	if _, err := os.Stat(x); err == nil {
		t.Error("a failed copy made its target directory")
	}
}
