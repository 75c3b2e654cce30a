package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// The Ministral-3 fixture (model/testdata/ministral3, made by
// scripts/make_ministral_fixtures.py running transformers 5's
// modeling_ministral3.py): a Mistral3ForConditionalGeneration checkpoint
// whose language model has YaRN frequencies and, with
// original_max_position_embeddings 8, the llama-4 query scale at slots 8–15.
const ministralDir = "testdata/ministral3/ministral3-tiny"

func loadMinistral(t *testing.T, dir string, opts LoadOptions) (*Model, *fixture.Ref, int, int) {
	t.Helper()
	m, err := LoadWith(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ref := fixture.OpenRef(t, filepath.Join(ministralDir, "reference.safetensors"))
	shape := ref.Shape("input_ids")
	return m, ref, shape[0], shape[1]
}

func TestMinistral3MatchesTransformers5(t *testing.T) {
	m, ref, b, tn := loadMinistral(t, ministralDir, LoadOptions{})
	if m.Architecture != "Mistral3ForConditionalGeneration" || m.Yarn == nil || m.Llama4Beta != 0.1 {
		t.Fatalf("config read as %s, yarn %v, llama-4 β %v", m.Architecture, m.Yarn, m.Llama4Beta)
	}
	for i, want := range ref.F64("rope_inv_freq_f32") {
		if got := m.invFreq[i]; float64(got) != want {
			t.Errorf("YaRN inv_freq[%d] = %v, transformers %v", i, got, want)
		}
	}
	mask := ref.Ints("attention_mask")
	out, err := m.Forward(Input{B: b, T: tn, Tokens: ref.Ints("input_ids"), Mask: mask}, Options{Logits: true, Labels: ref.Ints("labels")})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "logits", out.Logits, ref.F64("logits_f64"), m.VocabSize, realRows(mask), logitsTol)
	checkLoss(t, "batch loss", out.Loss, ref.F64("batch_loss_f64")[0], lossTol)
	for s, want := range ref.F64("loss_per_seq_f64") {
		checkLoss(t, "loss of sequence", out.LossPerSeq[s], want, lossTol)
	}
	checkLoss(t, "HF's float32 loss", out.Loss, ref.F64("hf_batch_loss_f32")[0], 1e-5)
	for g := 0; g < 2; g++ {
		prefix := "gen" + string(rune('0'+g)) + "_"
		prompt, want := ref.Ints(prefix+"prompt"), ref.Ints(prefix+"new_tokens")
		got, err := m.Generate(Input{B: 1, T: len(prompt), Tokens: prompt}, GenerateOptions{MaxNewTokens: len(want), StopIDs: []int{}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0], want) {
			t.Errorf("%s: generated %v, transformers %v", prefix, got[0], want)
		}
	}
}

// TestMinistral3BF16 loads the BF16 checkpoint keeping its matrices in
// bfloat16 (as the paper runs Ministral): the logits match the exact
// float64 forward of the same bfloat16 values.
func TestMinistral3BF16(t *testing.T) {
	m, ref, b, tn := loadMinistral(t, filepath.Join(ministralDir, "bf16"), LoadOptions{BF16Weights: true})
	mask := ref.Ints("attention_mask")
	out, err := m.Forward(Input{B: b, T: tn, Tokens: ref.Ints("input_ids"), Mask: mask}, Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "bf16 logits", out.Logits, ref.F64("bf16ckpt_logits_f64"), m.VocabSize, realRows(mask), logitsTol)
}

// TestLlama4Scale: 1 below original_max_position_embeddings, then
// 1 + β·ln(1 + ⌊slot/original⌋).
func TestLlama4Scale(t *testing.T) {
	for _, c := range []struct {
		slot int
		want float64
	}{{0, 1}, {16383, 1}, {16384, 1 + 0.1*math.Ln2}, {3 * 16384, 1 + 0.1*math.Log(4)}} {
		if got := llama4Scale(0.1, 16384, c.slot); math.Abs(float64(got)-c.want) > 1e-6 {
			t.Errorf("slot %d: scale %v, want %v", c.slot, got, c.want)
		}
	}
}
