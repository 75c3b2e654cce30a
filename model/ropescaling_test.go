package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestRopeScalingFixtures: the RoPE scalings of a Llama-like config's
// rope_scaling against transformers 4.51 (testdata/rope,
// scripts/make_rope_fixtures.py): linear, yarn from its factor, and yarn
// as Qwen2.5's long-context block gives it (an
// original_max_position_embeddings, which makes the factor
// max_position_embeddings ÷ it). The inverse frequencies and the attention
// scaling are HF's, and the logits within MODELS.md's 2e-4 of the float64
// reference.
func TestRopeScalingFixtures(t *testing.T) {
	for _, name := range []string{"llama-linear", "llama-yarn", "qwen2-yarn"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "rope", name)
			m, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
			inv := ropeInvFreq(&m.Config)
			want := ref.F64("inv_freq")
			if len(inv) != len(want) {
				t.Fatalf("%d inverse frequencies, HF %d", len(inv), len(want))
			}
			for i := range inv {
				if math.Abs(float64(inv[i])-want[i]) > 1e-7*want[i] {
					t.Errorf("inv_freq[%d] = %g, HF %g", i, inv[i], want[i])
				}
			}
			if got, want := m.ropeScale(), float32(ref.F64("attention_scaling")[0]); got != want {
				t.Errorf("attention scaling %v, HF %v", got, want)
			}
			ids, mask := ref.Ints("input_ids"), ref.Ints("attention_mask")
			shape := ref.Shape("input_ids")
			out, err := m.Forward(Input{B: shape[0], T: shape[1], Tokens: ids, Mask: mask}, Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			logits, v := ref.F64("logits_f64"), m.VocabSize
			worst := 0.0
			for r, keep := range mask {
				for j := 0; keep == 1 && j < v; j++ {
					worst = max(worst, math.Abs(float64(out.Logits[r*v+j])-logits[r*v+j]))
				}
			}
			if worst > 2e-4 {
				t.Errorf("logits: max |Δ| %.3g from the float64 reference, tolerance 2e-4", worst)
			}
			t.Logf("max |Δ logits| %.2g", worst)
		})
	}
}
