package lora

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// TestRealPEFTRSLoRA: an adapter with rsLoRA (scale alpha/sqrt(r)), a
// fractional alpha, on every linear layer and grouped by layer, saved and
// loaded by the real PEFT, gives our logits on float32 and bfloat16 models.
func TestRealPEFTRSLoRA(t *testing.T) {
	py := fixture.NewPEFT(t)
	type c struct {
		name, dir, out string
		got            []float32
		mask           []int
		v              int
	}
	var cs []c
	var jobs []map[string]any
	for _, name := range []string{"llama-tiny", "qwen3-tiny/bf16"} {
		dir := fixture.Dir(t, "fixtures", "models", name)
		m, err := model.LoadWith(dir, model.LoadOptions{BF16Weights: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(m, Options{R: 3, Alpha: 5.5, Targets: []string{AllLinear}, RSLoRA: true, GroupByLayer: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 7))
		for _, p := range a.Params() {
			for i := range p {
				p[i] = float32(0.2 * r.NormFloat64())
			}
		}
		ours := filepath.Join(t.TempDir(), "ours")
		if err := a.Save(ours); err != nil {
			t.Fatal(err)
		}
		a.Attach(m)
		ref := fixture.OpenRef(t, filepath.Join(fixture.Dir(t, "fixtures", "models", "llama-tiny"), "reference.safetensors"))
		shape, ids, mask := ref.Shape("input_ids"), ref.Ints("input_ids"), ref.Ints("attention_mask")
		out, err := m.Forward(model.Input{B: shape[0], T: shape[1], Tokens: ids, Mask: mask}, model.Options{Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		o := filepath.Join(t.TempDir(), "o.safetensors")
		cs = append(cs, c{name, dir, o, out.Logits, mask, m.VocabSize})
		jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "load", "adapter": ours}, dir, ids, mask, shape[0], o))
	}
	py.Run(map[string]any{"jobs": jobs})
	for _, x := range cs {
		mask := x.mask
		fixture.CloseLogits(t, x.name, x.got, fixture.Tensors(t, x.out)["logits"], x.v, func(r int) bool { return mask[r] == 1 }, 2e-4)
	}
}
