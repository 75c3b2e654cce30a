package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/safetensors"
)

// TestSaveRoundTrip: a model saved by Save loads back with the same tensors
// in the same dtype and the same logits, bit for bit, whether it is one
// file or shards with an index, float32 or bfloat16, tied or not; the
// source's other files come along and config.json says the saved dtype.
// With a chunk of 100 values (tensors read back in many chunks through the
// same buffers, the last one short; rows of 32 and 64 values) as with the
// default (every tensor in one chunk).
func TestSaveRoundTrip(t *testing.T) {
	defer func(c int) { saveChunk = c }(saveChunk)
	for _, chunk := range []int{saveChunk, 100} {
		saveChunk = chunk
		for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM"} {
			for _, bf16 := range []bool{false, true} {
				for _, maxShard := range []int64{0, 20_000} {
					name := fmt.Sprintf("chunk=%d/%s/bf16=%v/maxShard=%d", chunk, arch, bf16, maxShard)
					t.Run(name, func(t *testing.T) { saveRoundTrip(t, arch, bf16, maxShard) })
				}
			}
		}
	}
}

// TestSaveGarbage: Save reads the weights back through one chunk buffer and
// one byte buffer, so what it allocates is a chunk's worth (the values and
// their bytes, a little more as the buffers grow) and the files'
// bookkeeping, not the model's size again: a buffer per chunk made a
// full-parameter run's every checkpoint gigabytes of garbage, which the
// collector let pile up and the runtime kept resident. With many chunks a
// tensor, and with the default chunk, larger than any of this model's
// tensors (where a chunk's row ids sized by the chunk alone were 128 KiB a
// tensor).
func TestSaveGarbage(t *testing.T) {
	defer func(c int) { saveChunk = c }(saveChunk)
	for _, chunk := range []int{16 << 10, saveChunk} {
		saveChunk = chunk
		t.Run(fmt.Sprint(chunk), saveGarbage)
	}
}

func saveGarbage(t *testing.T) {
	c := tinyConfig("Qwen3ForCausalLM")
	c.VocabSize, c.HiddenSize, c.IntermediateSize = 4096, 256, 512
	src := t.TempDir()
	if err := WriteRandom(src, c, 9, 0.3); err != nil {
		t.Fatal(err)
	}
	m, err := LoadWith(src, LoadOptions{Unstacked: true})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := m.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	weights, largest := 0, 0
	for _, tt := range ts {
		weights += 4 * tt.Rows * tt.Cols
		largest = max(largest, tt.Rows*tt.Cols)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := m.Save(t.TempDir(), SaveOptions{Source: src}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// 1.25 MiB: the file writer's 1 MiB buffer (safetensors.WriteFile), the
	// header, the copied files; then a chunk's values and bytes (8 bytes a
	// value), 9/8 of that as the buffers grow to the largest chunk.
	chunk := min(saveChunk, largest)
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(5<<18+9*chunk); got > most {
		t.Errorf("Save of %d bytes of weights (the largest chunk %d values) allocated %d bytes, more than %d", weights, chunk, got, most)
	}
}

func saveRoundTrip(t *testing.T, arch string, bf16 bool, maxShard int64) {
	c := tinyConfig(arch)
	c.TieEmbeddings = arch == "LlamaForCausalLM"
	src := t.TempDir()
	write := WriteRandom
	if bf16 {
		write = WriteRandomBF16
	}
	if err := write(src, c, 9, 0.3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(`{"model": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{BF16Weights: bf16, Unstacked: true}
	m, err := LoadWith(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := m.Save(dst, SaveOptions{Source: src, MaxShard: maxShard}); err != nil {
		t.Fatal(err)
	}
	back, err := LoadWith(dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{B: 1, T: 5, Tokens: []int{1, 7, 33, 2, 90}}
	a, err1 := m.Forward(in, Options{Logits: true})
	b, err2 := back.Forward(in, Options{Logits: true})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range a.Logits {
		if math.Float32bits(a.Logits[i]) != math.Float32bits(b.Logits[i]) {
			t.Fatalf("logit %d: %v saved and loaded, %v before", i, b.Logits[i], a.Logits[i])
		}
	}
	ck, err := safetensors.OpenCheckpoint(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	ts, _ := m.Tensors()
	want := safetensors.F32
	if bf16 {
		want = safetensors.BF16
	}
	for _, tt := range ts {
		if info, ok := ck.Info(tt.Name); !ok || info.Dtype != want {
			t.Errorf("%s: %+v in the saved checkpoint, want dtype %s", tt.Name, info, want)
		}
	}
	if names := ck.Names(); len(names) != len(ts) || slices.Contains(names, "lm_head.weight") && c.TieEmbeddings {
		t.Errorf("saved tensors %v", names)
	}
	if _, err := os.Stat(filepath.Join(dst, "tokenizer.json")); err != nil {
		t.Errorf("tokenizer.json not copied: %v", err)
	}
	cfg, err := LoadConfig(filepath.Join(dst, "config.json"))
	if err != nil || cfg.TorchDtype != map[bool]string{true: "bfloat16", false: "float32"}[bf16] {
		t.Errorf("config.json: %+v, %v", cfg, err)
	}
	_, indexErr := os.Stat(filepath.Join(dst, "model.safetensors.index.json"))
	if sharded := indexErr == nil; sharded != (maxShard > 0) {
		t.Errorf("sharded %v with max shard %d", sharded, maxShard)
	}
}

// TestSaveMultimodal: Ministral-3's Mistral3ForConditionalGeneration
// checkpoint saved by Save (a full-parameter run's best/ and last/) is the
// whole multimodal checkpoint again: the language model under the source's
// names (model.language_model.*), the vision tower and projector copied
// unchanged, so that it loads back, here and in transformers, as its
// config.json says. A model saved as it was loaded has every tensor of the
// source with the source's bytes (float32, and bfloat16 kept in bfloat16).
// Saved under the causal LM's names (model.embed_tokens.weight) without
// the vision tower, the model did not load ("missing tensor
// model.language_model.embed_tokens.weight").
func TestSaveMultimodal(t *testing.T) {
	for _, bf16 := range []bool{false, true} {
		t.Run(fmt.Sprintf("bf16=%v", bf16), func(t *testing.T) {
			src := ministralDir
			if bf16 {
				src = filepath.Join(ministralDir, "bf16")
			}
			m, err := LoadWith(src, LoadOptions{BF16Weights: bf16, Unstacked: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			dir := t.TempDir()
			if err := m.Save(dir, SaveOptions{Source: src}); err != nil {
				t.Fatal(err)
			}
			want, err := safetensors.OpenCheckpoint(src)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			got, err := safetensors.OpenCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			if !slices.Equal(got.Names(), want.Names()) {
				t.Fatalf("saved tensors %v, the source's %v", got.Names(), want.Names())
			}
			for _, n := range want.Names() {
				wi, _ := want.Info(n)
				gi, _ := got.Info(n)
				if gi.Dtype != wi.Dtype || !slices.Equal(gi.Shape, wi.Shape) {
					t.Errorf("%s: saved %s %v, the source's %s %v", n, gi.Dtype, gi.Shape, wi.Dtype, wi.Shape)
					continue
				}
				gv, err1 := got.Float32(n)
				wv, err2 := want.Float32(n)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !slices.Equal(gv, wv) {
					t.Errorf("%s: saved values differ from the source's", n)
				}
			}
			back, err := LoadWith(dir, LoadOptions{BF16Weights: bf16})
			if err != nil {
				t.Fatalf("the saved model does not load: %v", err)
			}
			back.Free()
		})
	}
}

// A model directory (a git clone of a stranger's repository) whose
// added_tokens.json links to a file outside it: Save refuses rather than
// copy the file's contents into the model it writes, and CheckSourceFiles
// (which a run calls before it trains) says so; the Hugging Face cache's
// own links (snapshots/REV/FILE -> ../../blobs/HASH) are followed.
func TestSaveRefusesLinksOut(t *testing.T) {
	src := fixture.Dir(t, "fixtures", "models", "llama-tiny")
	copyIn := func(dir string) {
		for _, n := range []string{"config.json", "generation_config.json", "model.safetensors"} {
			b, err := os.ReadFile(filepath.Join(src, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("hf_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(repo, 0o755)
	copyIn(repo)
	if err := os.Symlink(secret, filepath.Join(repo, "added_tokens.json")); err != nil {
		t.Fatal(err)
	}
	m, err := Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSourceFiles(repo); err == nil {
		t.Error("CheckSourceFiles accepts a link out of the directory")
	}
	out := filepath.Join(t.TempDir(), "best")
	err = m.Save(out, SaveOptions{Source: repo})
	if b, rerr := os.ReadFile(filepath.Join(out, "added_tokens.json")); rerr == nil {
		t.Fatalf("Save copied the link's target into %s: %q", out, b)
	}
	if err == nil {
		t.Fatal("Save did not refuse the link")
	}

	cache := filepath.Join(t.TempDir(), "models--org--name")
	snap := filepath.Join(cache, "snapshots", "abc")
	blobs := filepath.Join(cache, "blobs")
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(blobs, 0o755)
	copyIn(blobs)
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		if err := os.Symlink(filepath.Join("..", "..", "blobs", n), filepath.Join(snap, n)); err != nil {
			t.Fatal(err)
		}
	}
	out = filepath.Join(t.TempDir(), "best")
	if err := m.Save(out, SaveOptions{Source: snap}); err != nil {
		t.Fatalf("a model in the Hugging Face cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "generation_config.json")); err != nil {
		t.Fatal(err)
	}
}
