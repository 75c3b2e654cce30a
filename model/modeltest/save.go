package modeltest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
)

// Save checks model.Save on b against the CPU backend, with float32 and
// with bfloat16 weights: a random model saved from b gives the files the
// CPU backend's save of it gives, byte for byte, and b's save allocates
// about what the CPU's does (a chunk's values and bytes, the file writer's
// buffer), not a weights' worth more: a backend whose downloads copy
// (tensor.HostReader) reads every chunk back into the saver's one host
// slice. A new host slice a chunk was the model's size in garbage a save.
func Save(t *testing.T, b tensor.Backend) {
	for _, bf16 := range []bool{false, true} {
		t.Run(fmt.Sprintf("bf16=%v", bf16), func(t *testing.T) { save(t, b, bf16) })
	}
}

func save(t *testing.T, b tensor.Backend, bf16 bool) {
	c := tinyConfig("Qwen3ForCausalLM")
	c.VocabSize, c.HiddenSize, c.IntermediateSize = 4096, 256, 512
	c.TieEmbeddings = false
	src := t.TempDir()
	write := model.WriteRandom
	if bf16 {
		write = model.WriteRandomBF16
	}
	if err := write(src, c, 9, 0.3); err != nil {
		t.Fatal(err)
	}
	leaks := leakCheck(t, b)
	onCPU, cpuAlloc, size := saveOn(t, nil, src, bf16) // the model's default backend, the CPU's
	onB, bAlloc, _ := saveOn(t, b, src, bf16)
	leaks("Save")
	sameFiles(t, onB, onCPU)
	// Beyond the CPU's, b may allocate the saver's host slice (4 bytes a
	// value of the largest chunk, at most the largest tensor: the CPU's
	// ToHost is the chunk buffer itself) and its bookkeeping of a read (a
	// GPU's row ids and kernel arguments), well under a sixteenth of the
	// weights; a new host slice a chunk would be the weights again.
	if most := cpuAlloc + uint64(4*size.largest+4*size.values/16); bAlloc > most {
		t.Errorf("Save of %d values (the largest tensor %d) allocated %d bytes on %s, %d on the CPU backend: more than %d",
			size.values, size.largest, bAlloc, b.Name(), cpuAlloc, most)
	}
	t.Logf("Save of %d values allocated %d bytes on %s, %d on the CPU backend", size.values, bAlloc, b.Name(), cpuAlloc)
}

// modelSize is a model's number of values, all and of its largest tensor.
type modelSize struct{ values, largest int }

// saveOn loads the model in src on b (nil: the CPU backend; unstacked, as
// model.Tensors needs), saves it and returns the folder, the bytes the
// save allocated and the model's size.
func saveOn(t *testing.T, b tensor.Backend, src string, bf16 bool) (string, uint64, modelSize) {
	m, err := model.LoadWith(src, model.LoadOptions{Backend: b, BF16Weights: bf16, Unstacked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ts, err := m.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	var size modelSize
	for _, tt := range ts {
		size.values += tt.Rows * tt.Cols
		size.largest = max(size.largest, tt.Rows*tt.Cols)
	}
	dir := t.TempDir()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := m.Save(dir, model.SaveOptions{Source: src}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return dir, after.TotalAlloc - before.TotalAlloc, size
}

// sameFiles fails unless the folders got and want hold the same files
// with the same bytes.
func sameFiles(t *testing.T, got, want string) {
	t.Helper()
	entries, err := os.ReadDir(want)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := os.ReadDir(got); err != nil || len(g) != len(entries) {
		t.Fatalf("%d files saved, %d by the CPU backend (%v)", len(g), len(entries), err)
	}
	for _, e := range entries {
		w, err1 := os.ReadFile(filepath.Join(want, e.Name()))
		g, err2 := os.ReadFile(filepath.Join(got, e.Name()))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("%s: %d bytes, not the CPU backend's %d bytes", e.Name(), len(g), len(w))
		}
	}
}
