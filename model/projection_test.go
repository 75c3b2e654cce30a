package model

import (
	"path/filepath"
	"testing"
)

// TestParamCount: the count the loader keeps is the sum of the sizes of
// the tensors Tensors lists (transformers' named_parameters: a tied head
// once), for each family's fixtures: OPT's learned positions and, in
// OPT-350m's shape, project_in and project_out; biases; Qwen3's q/k norms.
func TestParamCount(t *testing.T) {
	dirs := []string{filepath.Join("testdata", "opt", "opt-tiny"), filepath.Join("testdata", "opt", "opt-tiny-postnorm"),
		filepath.Join("testdata", "qwen2", "qwen2-tiny"), filepath.Join("testdata", "qwen2", "qwen2-tiny-untied"),
		filepath.Join("testdata", "qwen2", "llama-bias-tiny"), filepath.Join("testdata", "qwen2", "qwen3-bias-tiny")}
	for _, dir := range dirs {
		m, err := LoadWith(dir, LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := m.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, tn := range ts {
			sum += int64(tn.Size())
		}
		if got := m.ParamCount(); got != sum || got == 0 {
			t.Errorf("%s: ParamCount %d, its tensors hold %d", dir, got, sum)
		}
	}
}
