package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// Tensor is one of the model's parameter tensors: a matrix (Weight) or a
// vector (Vector, a norm's weight), named as in the HF state dict.
// Full-parameter training perturbs and updates them where the backend holds
// them; Tensors lists them in the order the noise counts their elements.
type Tensor struct {
	Name  string
	Layer int // the decoder layer; −1 for the embeddings, NumLayers for the final norm and the LM head
	// Rows and Cols are a matrix's shape (out × in); a vector has Rows 1.
	Rows, Cols int
	Weight     tensor.Weight // a matrix, or nil
	Vector     tensor.Buf    // a vector, or nil
	// BF16 says the tensor is held as bfloat16 numbers: the checkpoint
	// stored it so and it was loaded with LoadOptions.BF16Weights (a matrix
	// is then stored as bfloat16; a vector holds bfloat16 values in
	// float32). Training keeps it so, and Save writes it so.
	BF16 bool
	// F16 says the checkpoint stored the tensor as float16. It is held in
	// float32 (exactly, until training or a merge changes it); Save writes
	// it as float16 only when asked to (SaveOptions.Float16).
	F16 bool
}

// Size is the tensor's number of elements.
func (t Tensor) Size() int { return t.Rows * t.Cols }

// Tensors lists the model's parameter tensors in HF's named_parameters
// order (the family's: llamaTensors, optTensors). Variant.Weights is
// indexed by position in this list. A model whose projections are stacked
// (tensor.Stacker) has no list: Tensors returns an error.
func (m *Model) Tensors() ([]Tensor, error) { return m.fam.tensors(m) }

// tensorList collects a model's tensors in order.
type tensorList struct {
	m  *Model
	ts []Tensor
}

func (tl *tensorList) matrix(name string, layer int, w tensor.Weight) {
	n, k := w.Shape()
	tl.ts = append(tl.ts, Tensor{Name: name, Layer: layer, Rows: n, Cols: k, Weight: w, BF16: tl.m.storedBF16[name], F16: tl.m.storedF16[name]})
}

func (tl *tensorList) vector(name string, layer int, v tensor.Buf) {
	tl.ts = append(tl.ts, Tensor{Name: name, Layer: layer, Rows: 1, Cols: v.Len(), Vector: v, BF16: tl.m.storedBF16[name], F16: tl.m.storedF16[name]})
}

// errStacked is Tensors' error for a model whose projections are stacked.
var errStacked = fmt.Errorf("the model's projections are stacked (q|k|v, gate|up) for its backend: load it with LoadOptions.Unstacked to train its own weights")

// llamaTensors is Tensors for Llama, Qwen2 and Qwen3: model.embed_tokens;
// for each layer its attention's q_proj, k_proj, v_proj, o_proj (each
// weight, then its bias where it has one), Qwen3's q_norm and k_norm, its
// MLP's gate_proj, up_proj, down_proj (likewise), then input_layernorm and
// post_attention_layernorm; model.norm; lm_head unless it is tied to the
// embeddings. llamaLayerTensors gives a layer's order, which layerIDs
// counts.
func (m *Model) llamaTensors() ([]Tensor, error) {
	tl := &tensorList{m: m}
	tl.matrix("model.embed_tokens.weight", -1, m.Embed)
	for l := range m.Layers {
		layer, p := &m.Layers[l], fmt.Sprintf("model.layers.%d.", l)
		if layer.Attn.QKV != nil || layer.MLP.GateUp != nil {
			return nil, errStacked
		}
		for _, t := range llamaLayerTensors(layer) {
			if t.w != nil {
				tl.matrix(p+t.name, l, t.w)
			} else if t.v != nil {
				tl.vector(p+t.name, l, t.v)
			}
		}
	}
	tl.vector("model.norm.weight", m.NumLayers, m.Norm)
	if !m.TieEmbeddings {
		tl.matrix("lm_head.weight", m.NumLayers, m.LMHead)
	}
	return tl.ts, nil
}

// layerTensor is one of a decoder layer's tensors in Tensors' order: a
// matrix w or a vector v (both nil: the layer lacks it, and it takes no
// place).
type layerTensor struct {
	name string
	w    tensor.Weight
	v    tensor.Buf
}

// llamaLayerTensors lists a Llama-like layer's tensors in HF's
// named_parameters order (modules in the order their __init__ makes them;
// a Linear's weight before its bias). A bias or norm the layer lacks is
// nil and is skipped. layerIDs counts the same order.
func llamaLayerTensors(layer *Layer) []layerTensor {
	a, f := &layer.Attn, &layer.MLP
	return []layerTensor{
		{"self_attn.q_proj.weight", a.Q, nil}, {"self_attn.q_proj.bias", nil, a.QBias},
		{"self_attn.k_proj.weight", a.K, nil}, {"self_attn.k_proj.bias", nil, a.KBias},
		{"self_attn.v_proj.weight", a.V, nil}, {"self_attn.v_proj.bias", nil, a.VBias},
		{"self_attn.o_proj.weight", a.O, nil}, {"self_attn.o_proj.bias", nil, a.OBias},
		{"self_attn.q_norm.weight", nil, a.QNorm}, {"self_attn.k_norm.weight", nil, a.KNorm},
		{"mlp.gate_proj.weight", f.Gate, nil}, {"mlp.gate_proj.bias", nil, f.GateBias},
		{"mlp.up_proj.weight", f.Up, nil}, {"mlp.up_proj.bias", nil, f.UpBias},
		{"mlp.down_proj.weight", f.Down, nil}, {"mlp.down_proj.bias", nil, f.DownBias},
		{"input_layernorm.weight", nil, layer.AttnNorm}, {"post_attention_layernorm.weight", nil, layer.MLPNorm},
	}
}

// layerIDs are a decoder layer's tensors' positions in Tensors (−1: none).
type layerIDs struct {
	q, qBias, k, kBias, v, vBias, o, oBias, qNorm, kNorm          int
	gate, gateBias, up, upBias, down, downBias, attnNorm, mlpNorm int
}

// perLayer is the number of tensors of a Llama-like decoder layer in
// Tensors: 9 (the seven matrices and two norms), and Qwen3's q/k norms, and
// the biases the config gives.
func (m *Model) perLayer() int {
	n := 9
	if m.QKNorm {
		n += 2
	}
	if m.QKVBias {
		n += 3
	}
	if m.OBias {
		n++
	}
	if m.MLPBias {
		n += 3
	}
	return n
}

// The positions in Tensors of the embeddings, the final norm (−1: none)
// and its bias (−1: RMSNorm), OPT's project_out (−1: none) and the LM head
// (the embeddings' when tied), and of layer l's tensors.
func (m *Model) embedID() int { return 0 }
func (m *Model) normID() int {
	if m.IsOPT() {
		return m.optIDs().norm
	}
	return 1 + m.NumLayers*m.perLayer()
}
func (m *Model) normBiasID() int {
	if m.IsOPT() {
		return m.optIDs().normBias
	}
	return -1
}
func (m *Model) projectOutID() int { return m.optIDs().projectOut }
func (m *Model) headID() int {
	switch {
	case m.TieEmbeddings:
		return m.embedID()
	case m.IsOPT():
		return m.optIDs().head
	}
	return m.normID() + 1
}

// layerIDs gives layer l's tensors' positions in Tensors, counted in
// llamaLayerTensors' order from the config (a stacked model has no Tensors,
// and no perturbation reads these).
func (m *Model) layerIDs(l int) layerIDs {
	i := 1 + l*m.perLayer()
	next := func(present bool) int { // the next position, if the layer has the tensor
		if !present {
			return -1
		}
		i++
		return i - 1
	}
	var ids layerIDs // each line evaluates left to right, in Tensors' order
	ids.q, ids.qBias = next(true), next(m.QKVBias)
	ids.k, ids.kBias = next(true), next(m.QKVBias)
	ids.v, ids.vBias = next(true), next(m.QKVBias)
	ids.o, ids.oBias = next(true), next(m.OBias)
	ids.qNorm, ids.kNorm = next(m.QKNorm), next(m.QKNorm)
	ids.gate, ids.gateBias = next(true), next(m.MLPBias)
	ids.up, ids.upBias = next(true), next(m.MLPBias)
	ids.down, ids.downBias = next(true), next(m.MLPBias)
	ids.attnNorm, ids.mlpNorm = next(true), next(true)
	return ids
}
