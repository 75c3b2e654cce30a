package model_test

import (
	"fmt"

	"github.com/meazo-go/meazo/model"
)

// ExampleNewRandom builds a tiny random Qwen3-style model on the CPU and
// computes the causal-LM loss of one sequence: with random weights it is
// near ln(vocab) = ln 64 ≈ 4.16.
func ExampleNewRandom() {
	cfg := &model.Config{
		Architecture: "Qwen3ForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
		BOSTokenID: -1,
	}
	m, err := model.NewRandom(cfg, 1, 0.02)
	if err != nil {
		panic(err)
	}
	defer m.Free()
	tokens := []int{5, 9, 12, 7, 30, 2}
	labels := []int{-100, 9, 12, 7, 30, 2} // HF convention: unshifted; -100 is not supervised
	out, err := m.Forward(model.Input{B: 1, T: len(tokens), Tokens: tokens}, model.Options{Labels: labels})
	if err != nil {
		panic(err)
	}
	fmt.Printf("loss %.2f over %d tokens\n", out.Loss, out.Tokens)
	// Output:
	// loss 4.15 over 5 tokens
}
