package model

import "github.com/meazo-go/meazo/tensor"

// family is how one model family computes where the families differ: how
// a checkpoint's tensors are laid out, how tokens become the first hidden
// states, how a decoder layer runs, and how the tensors are listed for
// full-parameter training. A model's family is picked once, at load, from
// its config's architecture (familyOf); the rest of the package (the
// forward pass, the batched variants with prefix caching, generation, the
// loss, the perturbed reads) is shared, and so are the helpers a family's
// functions are made of (matMul, norm, addBias, bySegment, tokenRows, the
// attention over the KV cache).
//
// A new family is a value of this type and a case in familyOf: a model
// whose layers are Llama's (Mistral's text models) needs none.
type family struct {
	// build reads the family's tensors into m (load.go's builder).
	build func(m *Model, b *builder)
	// embed writes the first hidden states [b·tn][hidden] of b sequences
	// of tn tokens at positions (with a prompt's virtual tokens first when
	// prompt is not nil), read as weights perturbs the model's tensors
	// (nil: as they are).
	embed func(m *Model, x tensor.Buf, tokens, positions []int, b, tn int, prompt []float32, weights []*tensor.Perturbation)
	// layer applies decoder layer l within the pass p (layerForward's
	// contract).
	layer func(m *Model, l int, x tensor.Buf, p *pass, keep []int) tensor.Buf
	// tensors lists the parameter tensors in HF's named_parameters order.
	tensors func(m *Model) ([]Tensor, error)
}

var (
	llama = &family{build: buildLlama, embed: (*Model).llamaEmbed, layer: (*Model).llamaLayer, tensors: (*Model).llamaTensors}
	opt   = &family{build: buildOPT, embed: (*Model).optEmbed, layer: (*Model).optLayer, tensors: (*Model).optTensors}
)

// familyOf is the family of a config's architecture (ParseConfig accepted
// it: one of Architectures).
func familyOf(c *Config) *family {
	if c.IsOPT() {
		return opt
	}
	return llama
}
