package fullparam_test

import (
	"fmt"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/zo"
)

// lossAt is the objective of full-parameter ZO: the batch's loss under each
// of the engine's variants, the model's own weights read perturbed as p
// lays them out (one batched forward for all of them). Each variant runs
// the whole model; train's objective starts a variant of one group at the
// group's layer (Params.GroupLayer, model.Variant.From), from the base
// pass's hidden state (the unperturbed model's) entering it.
type lossAt struct {
	m      *model.Model
	p      *fullparam.Params
	in     model.Input
	labels []int
}

func (o lossAt) Evaluate(_ [][]float32, vs []zo.Variant) ([]float64, error) {
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		mv[i] = o.p.Variant(v)
	}
	losses, _, err := o.m.Losses(o.in, o.labels, model.Variant{}, mv)
	return losses, err
}

// A tiny Llama's own weights trained by ZO-Adam, the embeddings (tied:
// also the LM head) frozen, one parameter group a decoder layer and one for
// the final norm (grouped estimation). The model is loaded Unstacked, as
// full-parameter training needs it. The engine's step
// perturbs and updates the weights where they are, on the backend; the
// only memory it adds is ZO-Adam's two moments, 8 bytes a trained
// parameter.
func ExampleNew() {
	m, err := model.NewRandomWith(&model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 32, HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4, TieEmbeddings: true, BOSTokenID: -1,
	}, 1, 0.02, model.LoadOptions{Unstacked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Free()
	p, err := fullparam.New(m, fullparam.Options{Exclude: []string{"model.embed_tokens.weight"}, Grouped: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Free()
	fmt.Printf("%d of the model's %d parameters train, in groups of %v\n", p.Count(), p.ModelSize(), p.Dims())
	names := p.Tensors()
	fmt.Printf("%d tensors: %s, …, %s\n", len(names), names[0], names[len(names)-1])

	eng, err := zo.NewStore(p, zo.NewAdam(1e-3), zo.Config{Eps: 1e-3, Q: 1, Seed: 7, Mode: zo.Grouped})
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens := []int{5, 9, 12, 7, 30, 2}
	labels := []int{-100, 9, 12, 7, 30, 2}
	if _, err := eng.Step(lossAt{m, p, model.Input{B: 1, T: len(tokens), Tokens: tokens}, labels}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("after %d step: %d bytes of optimizer state (8 × %d)\n", eng.StepCount(), p.StateBytes(), p.Count())
	// Output:
	// 4688 of the model's 5200 parameters train, in groups of [2336 2336 16]
	// 19 tensors: model.layers.0.self_attn.q_proj.weight, …, model.norm.weight
	// after 1 step: 37504 bytes of optimizer state (8 × 4688)
}
