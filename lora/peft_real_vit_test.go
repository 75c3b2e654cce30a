package lora

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// vitPEFTTol bounds |Δ logit| between meazo-go's float32 forward of the
// tiny ViT with an adapter and PEFT's float32 forward of the same adapter
// (torch 1.13 on the CPU): both are float32 sums of the same terms in
// other orders, and on vit-tiny, whose logits reach about 5, they
// differed by at most 1.3e-5 (the log says; the base model alone by 8e-6,
// a few float32 ulps of the largest logit); 2e-4 is the fixtures' float32
// tolerance on logits (backendtest.Float32), as the decoders' round trip
// (peftTol) uses, far below what any adapter's term moves (moves asks for
// 100× it).
const vitPEFTTol = 2e-4

// TestRealPEFTViTRoundTrip: a ViT adapter meazo-go saved, with nonzero
// LoRA matrices (B too, which PEFT starts at zero) and a classifier moved
// from the model's, is loaded by PEFT 0.15's PeftModel.from_pretrained
// (scripts/peft_check.py) with the very tensors meazo-go wrote (every one
// of them: PEFT holds no more and no fewer) and gives meazo-go's logits
// within vitPEFTTol; and the adapter moves the logits. Three adapters of
// vit-tiny (3 layers): on query and value (the default, the paper's);
// all-linear (every linear layer of the encoder, saved as PEFT's names
// "query", "key", "value", "dense"); and on key and "output.dense" (which
// PEFT reads as attention.output.dense and output.dense) of layers 0 and 2
// only (layers_to_transform [0, 2]: layer 1 keeps its weights).
func TestRealPEFTViTRoundTrip(t *testing.T) {
	py := fixture.NewPEFT(t)
	m, ref := loadViT(t)
	pixels, err := ref.Float32("pixel_values")
	if err != nil {
		t.Fatal(err)
	}
	n := 4
	base, err := m.Logits(pixels, n)
	if err != nil {
		t.Fatal(err)
	}
	pixelFile, err := filepath.Abs(filepath.Join(vitTiny, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(vitTiny)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	out := func(job string) string { return filepath.Join(tmp, job+".safetensors") }
	job := func(kind, name, adapter string) map[string]any {
		j := map[string]any{"kind": kind, "base": dir, "pixel_values": pixelFile, "out": out(name)}
		if adapter != "" {
			j["adapter"] = adapter
		}
		return j
	}
	cases := []struct {
		name    string
		targets []string
		layers  []int
	}{
		{"query-value", nil, nil},
		{"all-linear", []string{AllLinear}, nil},
		{"layers-0-2", []string{"key", "output.dense"}, []int{0, 2}},
	}
	jobs := []map[string]any{job("base", "base", "")}
	ours := map[string][]float32{}
	for i, c := range cases {
		a, err := NewViT(m, Options{R: 4, Alpha: 8, Targets: c.targets, Layers: c.layers, Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Values as training leaves them: B nonzero, the classifier moved.
		r := rand.New(rand.NewPCG(11, uint64(i)))
		a.eachLoRA(a.params, func(_ int, _ model.Projection, _ string, v []float32) {
			for j := range v {
				v[j] = float32(0.2 * r.NormFloat64())
			}
		})
		w, b := a.classifier(a.params)
		for _, v := range [][]float32{w, b} {
			for j := range v {
				v[j] += float32(0.05 * r.NormFloat64())
			}
		}
		a.SetBaseModel(dir)
		saved := filepath.Join(tmp, c.name)
		if err := a.Save(saved); err != nil {
			t.Fatal(err)
		}
		ours[c.name] = adaptedLogits(t, a, m, pixels)
		jobs = append(jobs, job("load", c.name, saved))
	}
	py.Run(map[string]any{"jobs": jobs})

	peftBase := fixture.Tensors(t, out("base"))["logits"]
	classes := m.Config.NumLabels
	all := func(int) bool { return true }
	fixture.CloseLogits(t, "the base ViT: meazo-go vs transformers", base, peftBase, classes, all, vitPEFTTol)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loaded := fixture.Tensors(t, out(c.name))
			sameTensors(t, "PEFT's tensors of meazo-go's ViT adapter", fixture.Tensors(t, filepath.Join(tmp, c.name, "adapter_model.safetensors")), loaded)
			fixture.CloseLogits(t, "meazo-go's ViT adapter: meazo-go vs PEFT", ours[c.name], loaded["logits"], classes, all, vitPEFTTol)
			moves(t, "meazo-go's ViT adapter", loaded["logits"], base, classes, all)
		})
	}
}
