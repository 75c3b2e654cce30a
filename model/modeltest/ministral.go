package modeltest

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// MinistralFixture is the directory of the tiny Ministral-3 fixture
// (model/testdata/ministral3, made by scripts/make_ministral_fixtures.py
// running transformers 5's modeling_ministral3.py): a
// Mistral3ForConditionalGeneration checkpoint whose language model has YaRN
// frequencies and the llama-4 query scale at slots 8–15, in float32 and
// (bf16/) bfloat16. It is found as CommittedDir finds the others, so that
// every backend's tests run it wherever their package is, without MEAZO_SHARED.
func MinistralFixture(t testing.TB) string {
	return CommittedDir(t, "ministral3/ministral3-tiny")
}

// Ministral runs the Ministral-3 fixture on b: against transformers 5's
// references, and against the CPU backend as Models does for the other
// fixtures (LoRA, prompt tuning, left-padded generation, batched variants).
// Its language model adds no op to the backend (YaRN and the llama-4 scale
// live in the host's RoPE tables), so a backend runs it once, not under
// each of its kernel variants as Models.
func Ministral(t *testing.T, b tensor.Backend, tol backendtest.Tolerance) {
	t.Run("References", func(t *testing.T) { ministralReferences(t, b, tol) })
	t.Run("AgainstCPU", func(t *testing.T) {
		if shortCPU(b) {
			t.Skip("-short on the CPU backend: the run against the CPU is the native tests' (shortCPU says why)")
		}
		againstCPU(t, b, MinistralFixture(t), tol)
	})
}

// ministralReferences checks the Ministral-3 fixture on b against
// transformers 5's references: the float32 checkpoint's logits (within
// tol.Logits of the float64 forward) and losses, its greedy generations
// token for token, the logits with PEFT's LoRA adapter, and the bf16
// checkpoint, widened to float32 and kept in bfloat16, against the float64
// forward of its bfloat16 values.
func ministralReferences(t *testing.T, b tensor.Backend, tol backendtest.Tolerance) {
	dir := MinistralFixture(t)
	ref, in, labels, real := referenceBatch(t, dir)
	leaks := leakCheck(t, b)

	m, err := model.LoadWith(dir, model.LoadOptions{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(in, model.Options{Logits: true, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "logits", out.Logits, ref.F64("logits_f64"), m.VocabSize, real, tol.Logits)
	lossClose(t, "batch loss", out.Loss, ref.F64("batch_loss_f64")[0], tol.Loss)
	for s, want := range ref.F64("loss_per_seq_f64") {
		lossClose(t, "loss of a sequence", out.LossPerSeq[s], want, tol.Loss)
	}
	for g := range 2 {
		p := "gen" + string(rune('0'+g)) + "_"
		prompt, want := ref.Ints(p+"prompt"), ref.Ints(p+"new_tokens")
		got, err := m.Generate(model.Input{B: 1, T: len(prompt), Tokens: prompt}, model.GenerateOptions{MaxNewTokens: len(want), StopIDs: []int{}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0], want) {
			t.Errorf("%s: generated %v, transformers %v", p, got[0], want)
		}
	}

	// PEFT 0.15's adapter, made on the checkpoint's module tree: keyed
	// under model.language_model.layers, with vision-tower matrices that
	// the text path never uses.
	if _, err := lora.LoadPEFT(filepath.Join(dir, "lora"), m); err != nil {
		t.Fatal(err)
	}
	lo, err := m.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "PEFT LoRA logits", lo.Logits, ref.F64("lora_logits_f64"), m.VocabSize, real, tol.Logits+1e-4) // MODELS.md: 3e-4 with an adapter
	m.Adapter = nil
	m.Free()

	for _, keep := range []bool{false, true} {
		m16, err := model.LoadWith(filepath.Join(dir, "bf16"), model.LoadOptions{Backend: b, BF16Weights: keep})
		if err != nil {
			t.Fatal(err)
		}
		o, err := m16.Forward(in, model.Options{Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		what := "bf16-checkpoint logits (widened)"
		if keep {
			what = "bf16-checkpoint logits (kept in bfloat16)"
		}
		closeTo(t, what, o.Logits, ref.F64("bf16ckpt_logits_f64"), m16.VocabSize, real, tol.Logits)
		m16.Free()
	}
	leaks("Ministral-3 fixture checks")
}
