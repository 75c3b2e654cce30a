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
	tl.ts = append(tl.ts, Tensor{Name: name, Layer: layer, Rows: n, Cols: k, Weight: w, BF16: tl.m.storedBF16[name]})
}

func (tl *tensorList) vector(name string, layer int, v tensor.Buf) {
	tl.ts = append(tl.ts, Tensor{Name: name, Layer: layer, Rows: 1, Cols: v.Len(), Vector: v, BF16: tl.m.storedBF16[name]})
}

// errStacked is Tensors' error for a model whose projections are stacked.
var errStacked = fmt.Errorf("the model's projections are stacked (q|k|v, gate|up) for its backend: load it with LoadOptions.Unstacked to train its own weights")

// llamaTensors is Tensors for Llama and Qwen3: model.embed_tokens; for
// each layer its attention's q_proj, k_proj, v_proj, o_proj (and Qwen3's
// q_norm, k_norm), its MLP's gate_proj, up_proj, down_proj, then
// input_layernorm and post_attention_layernorm; model.norm; lm_head unless
// it is tied to the embeddings.
func (m *Model) llamaTensors() ([]Tensor, error) {
	tl := &tensorList{m: m}
	matrix, vector := tl.matrix, tl.vector
	matrix("model.embed_tokens.weight", -1, m.Embed)
	for l := range m.Layers {
		layer, p := &m.Layers[l], fmt.Sprintf("model.layers.%d.", l)
		if layer.Attn.QKV != nil || layer.MLP.GateUp != nil {
			return nil, errStacked
		}
		matrix(p+"self_attn.q_proj.weight", l, layer.Attn.Q)
		matrix(p+"self_attn.k_proj.weight", l, layer.Attn.K)
		matrix(p+"self_attn.v_proj.weight", l, layer.Attn.V)
		matrix(p+"self_attn.o_proj.weight", l, layer.Attn.O)
		if layer.Attn.QNorm != nil {
			vector(p+"self_attn.q_norm.weight", l, layer.Attn.QNorm)
			vector(p+"self_attn.k_norm.weight", l, layer.Attn.KNorm)
		}
		matrix(p+"mlp.gate_proj.weight", l, layer.MLP.Gate)
		matrix(p+"mlp.up_proj.weight", l, layer.MLP.Up)
		matrix(p+"mlp.down_proj.weight", l, layer.MLP.Down)
		vector(p+"input_layernorm.weight", l, layer.AttnNorm)
		vector(p+"post_attention_layernorm.weight", l, layer.MLPNorm)
	}
	vector("model.norm.weight", m.NumLayers, m.Norm)
	if !m.TieEmbeddings {
		matrix("lm_head.weight", m.NumLayers, m.LMHead)
	}
	return tl.ts, nil
}

// layerIDs are a decoder layer's tensors' positions in Tensors (−1: none).
type layerIDs struct {
	q, k, v, o, qNorm, kNorm, gate, up, down, attnNorm, mlpNorm int
}

// perLayer is the number of tensors of a decoder layer in Tensors.
func (m *Model) perLayer() int {
	if m.QKNorm {
		return 11
	}
	return 9
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

func (m *Model) layerIDs(l int) layerIDs {
	i := 1 + l*m.perLayer()
	ids := layerIDs{q: i, k: i + 1, v: i + 2, o: i + 3, qNorm: -1, kNorm: -1}
	i += 4
	if m.QKNorm {
		ids.qNorm, ids.kNorm = i, i+1
		i += 2
	}
	ids.gate, ids.up, ids.down, ids.attnNorm, ids.mlpNorm = i, i+1, i+2, i+3, i+4
	return ids
}
