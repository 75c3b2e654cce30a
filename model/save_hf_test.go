package model_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// untiedCopy writes a copy of src (llama-tiny) with tie_word_embeddings false
// and an lm_head.weight that differs from the embeddings.
func untiedCopy(t *testing.T, src string) string {
	dst := filepath.Join(t.TempDir(), "untied")
	os.MkdirAll(dst, 0o755)
	b, _ := os.ReadFile(filepath.Join(src, "config.json"))
	var cfg map[string]any
	json.Unmarshal(b, &cfg)
	cfg["tie_word_embeddings"] = false
	b, _ = json.Marshal(cfg)
	os.WriteFile(filepath.Join(dst, "config.json"), b, 0o644)
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, info := range f.Tensors() {
		v, _ := f.Float32(info.Name)
		ts = append(ts, safetensors.F32Tensor(info.Name, info.Shape, v))
		if info.Name == "model.embed_tokens.weight" {
			h := slices.Clone(v)
			for i := range h {
				h[i] = h[i]*0.5 + float32(i%7)*0.01
			}
			ts = append(ts, safetensors.F32Tensor("lm_head.weight", info.Shape, h))
		}
	}
	if err := safetensors.WriteFile(filepath.Join(dst, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSaveLoadsInTransformers: a model Save writes (a full-parameter run's
// best/ and last/), in one file and in shards with an index, loads in
// transformers (from_pretrained, no weight missing or unexpected) and in
// meazo, with the same logits: Llama and Qwen3 in float32 and bfloat16,
// with biases, OPT pre- and post-norm, YaRN RoPE, an untied head.
func TestSaveLoadsInTransformers(t *testing.T) {
	py := fixture.NewPEFT(t)
	root, _ := fixture.ModuleRoot()
	fx := func(p ...string) string { return fixture.Dir(t, append([]string{"fixtures", "models"}, p...)...) }
	cases := map[string]string{
		"llama-tiny":        fx("llama-tiny"),
		"llama-tiny-bf16":   fx("llama-tiny", "bf16"),
		"qwen3-tiny-bf16":   fx("qwen3-tiny", "bf16"),
		"llama-bias-tiny":   filepath.Join(root, "model", "testdata", "qwen2", "llama-bias-tiny"),
		"qwen3-bias-tiny":   filepath.Join(root, "model", "testdata", "qwen2", "qwen3-bias-tiny"),
		"opt-tiny":          filepath.Join(root, "model", "testdata", "opt", "opt-tiny"),
		"opt-tiny-postnorm": filepath.Join(root, "model", "testdata", "opt", "opt-tiny-postnorm"),
		"llama-yarn":        filepath.Join(root, "model", "testdata", "rope", "llama-yarn"),
		"llama-untied":      untiedCopy(t, fx("llama-tiny")),
	}
	ref := fixture.OpenRef(t, filepath.Join(fx("llama-tiny"), "reference.safetensors"))
	shape, ids, mask := ref.Shape("input_ids"), ref.Ints("input_ids"), ref.Ints("attention_mask")
	type check struct {
		name, out string
		got       []float32
		v         int
	}
	var checks []check
	var jobs []map[string]any
	for name, dir := range cases {
		for _, shard := range []int64{0, 20000} {
			m, err := model.LoadWith(dir, model.LoadOptions{Unstacked: true, BF16Weights: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			saved := filepath.Join(t.TempDir(), "saved")
			if err := m.Save(saved, model.SaveOptions{Source: dir, MaxShard: shard}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			m2, err := model.LoadWith(saved, model.LoadOptions{Unstacked: true, BF16Weights: true})
			if err != nil {
				t.Fatalf("%s reload: %v", name, err)
			}
			idsM := slices.Clone(ids)
			for i := range idsM {
				idsM[i] %= m.VocabSize
			}
			out, err := m2.Forward(model.Input{B: shape[0], T: shape[1], Tokens: idsM, Mask: mask}, model.Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			o := filepath.Join(t.TempDir(), "logits.safetensors")
			checks = append(checks, check{name: name, out: o, got: out.Logits, v: m.VocabSize})
			jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "base", "strict": true}, saved, idsM, mask, shape[0], o))
		}
	}
	py.Run(map[string]any{"jobs": jobs})
	for _, c := range checks {
		got := fixture.Tensors(t, c.out)["logits"]
		real := func(r int) bool { return mask[r] == 1 }
		fixture.CloseLogits(t, c.name, c.got, got, c.v, real, 2e-4)
	}
}
