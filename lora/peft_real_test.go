package lora

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// The round trip with the real PEFT (scripts/peft_check.py, transformers
// 4.51 + PEFT 0.15 on python3-torch): logits within peftTol of meazo-go's.
const peftTol = 2e-4

// TestRealPEFTRoundTrip: a LoRA adapter meazo-go saved loads in
// PeftModel.from_pretrained with the very tensors meazo-go wrote and gives
// meazo-go's logits; one PEFT made (get_peft_model, save_pretrained) loads
// in meazo-go with the tensors PEFT holds and gives PEFT's logits; and both
// adapters move the logits (a zero adapter would pass everything else).
func TestRealPEFTRoundTrip(t *testing.T) {
	py := fixture.NewPEFT(t)
	type check struct {
		name, ours, theirs string
		m                  *model.Model
		in                 model.Input
		a                  *Adapter
		out                func(job string) string
	}
	var checks []check
	var jobs []map[string]any
	for name, dir := range py.Models() {
		m, err := model.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
		shape, ids, mask := ref.Shape("input_ids"), ref.Ints("input_ids"), ref.Ints("attention_mask")
		// meazo-go's adapter: PEFT's shape, values as training leaves them.
		a, err := New(m, Options{R: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 7))
		for _, p := range a.Params() {
			for i := range p {
				p[i] = float32(0.2 * r.NormFloat64())
			}
		}
		a.SetBaseModel(dir)
		tmp := t.TempDir()
		c := check{name: name, ours: filepath.Join(tmp, "meazo-lora"), theirs: filepath.Join(tmp, "peft-lora"), m: m, a: a,
			in:  model.Input{B: shape[0], T: shape[1], Tokens: ids, Mask: mask},
			out: func(job string) string { return filepath.Join(tmp, job+".safetensors") }}
		if err := a.Save(c.ours); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, c)
		jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "base"}, dir, ids, mask, shape[0], c.out("base")),
			fixture.PEFTJob(map[string]any{"kind": "load", "adapter": c.ours}, dir, ids, mask, shape[0], c.out("loaded")),
			fixture.PEFTJob(map[string]any{"kind": "make-lora", "dir": c.theirs, "r": 4, "alpha": 8, "targets": []string{"q_proj", "v_proj"}, "seed": 1}, dir, ids, mask, shape[0], c.out("made")))
	}
	py.Run(map[string]any{"jobs": jobs})

	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			m, in := c.m, c.in
			real := func(r int) bool { return in.Mask[r] == 1 }
			base := fixture.Tensors(t, c.out("base"))["logits"]

			// meazo-go → PEFT.
			c.a.Attach(m)
			got := logits(t, m, in)
			loaded := fixture.Tensors(t, c.out("loaded"))
			sameTensors(t, "PEFT's tensors of meazo-go's adapter", fixture.Tensors(t, filepath.Join(c.ours, "adapter_model.safetensors")), loaded)
			fixture.CloseLogits(t, "meazo-go's adapter: meazo-go vs PEFT", got, loaded["logits"], m.VocabSize, real, peftTol)
			moves(t, "meazo-go's adapter", loaded["logits"], base, m.VocabSize, real)

			// PEFT → meazo-go.
			b, err := Load(c.theirs, m, false)
			if err != nil {
				t.Fatal(err)
			}
			b.Attach(m)
			got = logits(t, m, in)
			m.Adapter = nil
			made := fixture.Tensors(t, c.out("made"))
			back := filepath.Join(t.TempDir(), "peft-lora-resaved")
			if err := b.Save(back); err != nil {
				t.Fatal(err)
			}
			sameTensors(t, "meazo-go's tensors of PEFT's adapter", fixture.Tensors(t, filepath.Join(back, "adapter_model.safetensors")), made)
			fixture.CloseLogits(t, "PEFT's adapter: meazo-go vs PEFT", got, made["logits"], m.VocabSize, real, peftTol)
			moves(t, "PEFT's adapter", made["logits"], base, m.VocabSize, real)
		})
	}
}

// logits is m's fp32 forward of in, [B·T·V].
func logits(t *testing.T, m *model.Model, in model.Input) []float32 {
	t.Helper()
	out, err := m.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	return out.Logits
}

// sameTensors: every tensor of the adapter file (names as saved) is in
// peft's dump ("adapter/<name>") with the same bits, and nothing else is.
func sameTensors(t *testing.T, what string, file, peft map[string][]float32) {
	t.Helper()
	n := 0
	for k, v := range peft {
		if name, ok := cutPrefix(k, "adapter/"); ok {
			n++
			if w, ok := file[name]; !ok || !slices.Equal(v, w) {
				t.Errorf("%s: %s differs or is missing from the file (file has %d tensors)", what, name, len(file))
			}
		}
	}
	if n != len(file) || n == 0 {
		t.Errorf("%s: %d tensors, the file has %d", what, n, len(file))
	}
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// moves: the adapter changes the logits by more than rounding could.
func moves(t *testing.T, what string, with, without []float32, v int, keep func(int) bool) {
	t.Helper()
	if d, _ := fixture.MaxAbsDiff(with, fixture.Widen(without), v, keep); d < 100*peftTol || math.IsNaN(d) {
		t.Errorf("%s moves the logits by at most %.3g: a zero adapter would pass this test", what, d)
	}
}
