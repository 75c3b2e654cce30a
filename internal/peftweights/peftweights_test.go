package peftweights

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/safetensors"
)

// TestOpen: the safetensors file opens; PEFT's pickle in its place is named
// with the way out; a directory with neither says the file is missing.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if err := safetensors.WriteFile(filepath.Join(dir, File), []safetensors.Tensor{safetensors.F32Tensor("x", []int{1}, []float32{1})}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "adapter_model.bin"), []byte("PK"), 0o644)
	if _, err := Open(bin); err == nil || !strings.Contains(err.Error(), "adapter_model.bin") || !strings.Contains(err.Error(), "safe_serialization=True") {
		t.Errorf("a pickled adapter: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), File) {
		t.Errorf("an empty directory: %v", err)
	}
}
