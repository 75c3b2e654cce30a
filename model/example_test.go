package model_test

import (
	"fmt"

	"github.com/meazo-go/meazo/data"
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

// ExampleModel_Generate continues two prompts of different lengths by greedy
// decoding in one batch: data.GenerateBatch left-pads them so that both
// rows' next tokens sit at the same position, and each row stops after its
// own stop token (here token 8 plays the end of sequence) or after
// MaxNewTokens.
func ExampleModel_Generate() {
	cfg := &model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 5e5, BOSTokenID: 1,
		EOSTokenIDs: []int{2},
	}
	m, err := model.NewRandom(cfg, 7, 0.5)
	if err != nil {
		panic(err)
	}
	defer m.Free()
	const pad = 0
	b := data.GenerateBatch([][]int{{1, 17, 40, 9}, {1, 33}}, pad)
	out, err := m.Generate(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, model.GenerateOptions{MaxNewTokens: 5, StopIDs: []int{8}})
	if err != nil {
		panic(err)
	}
	for i, toks := range out {
		fmt.Printf("row %d: %v\n", i, toks)
	}
	// Output:
	// row 0: [41 34 8]
	// row 1: [56 56 56 56 56]
}

// ExampleModel_Losses evaluates one batch under three versions of the
// trainable part in a single batched forward, as a ZO step does: no adapter,
// and a LoRA update of layer 1's v_proj at +s and −s. The perturbed
// variants start at layer 1 (From): they go on from the base pass's output
// of layer 0 (prefix caching), so the layers run are 1 (the base pass) +
// 2 (the variant without adapter) + 1 + 1 = 5, against 6 without the cache.
// A variant's loss is the one Forward gives for it alone, bit for bit,
// whatever else shares the pass.
func ExampleModel_Losses() {
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
	in := model.Input{B: 1, T: 6, Tokens: []int{5, 9, 12, 7, 30, 2}}
	labels := []int{-100, 9, 12, 7, 30, 2}
	lora := func(s float32) *model.Adapter {
		const r, out, hidden = 2, 2 * 8, 32 // v_proj: NumKVHeads·HeadDim outputs
		l := &model.LoRA{R: r, A: make([]float32, r*hidden), B: make([]float32, out*r), Scale: 1}
		for i := range l.A {
			l.A[i] = 0.5
		}
		for i := range l.B {
			l.B[i] = s
		}
		return &model.Adapter{Layers: []model.LayerAdapter{{}, {V: l}}}
	}
	base := model.Variant{}
	variants := []model.Variant{base, {Adapter: lora(0.5), From: 1}, {Adapter: lora(-0.5), From: 1}}
	losses, stats, err := m.Losses(in, labels, base, variants)
	if err != nil {
		panic(err)
	}
	alone, err := m.Forward(in, model.Options{Labels: labels})
	if err != nil {
		panic(err)
	}
	fmt.Printf("losses %.3f %.3f %.3f\n", losses[0], losses[1], losses[2])
	fmt.Printf("the base variant's is Forward's: %v; layer evaluations: %d\n", losses[0] == alone.Loss, stats.LayerEvals)
	// Output:
	// losses 4.152 4.121 4.195
	// the base variant's is Forward's: true; layer evaluations: 5
}
