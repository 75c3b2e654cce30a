package model

import (
	"fmt"
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// OPT (transformers' modeling_opt.py, OPTForCausalLM): learned positions
// added to the token embeddings, LayerNorms with a bias, biases in every
// projection, multi-head attention without RoPE, a ReLU MLP (fc1, fc2), a
// tied LM head; LayerNorm before each block and a final LayerNorm (OPT-125m,
// 1.3B and up), or after each residual add and none at the end (OPT-350m),
// whose embeddings are also narrower than the hidden size
// (word_embed_proj_dim, with project_in and project_out).

// optPositionOffset is OPT's offset of the learned positions: position p is
// row p+2 of embed_positions (OPTLearnedPositionalEmbedding).
const optPositionOffset = 2

// optPerLayer is the number of tensors of an OPT decoder layer in Tensors.
const optPerLayer = 16

// buildOPT reads an OPT checkpoint's tensors into m. OPT's projections are
// never stacked: each has its own bias.
func buildOPT(m *Model, b *builder) {
	c := &m.Config
	d, e, f := c.HiddenSize, c.embedDim(), c.IntermediateSize
	const p = "model.decoder."
	m.Embed = b.matrix(p+"embed_tokens.weight", c.VocabSize, e)
	m.Positions = b.matrix(p+"embed_positions.weight", c.MaxPositions+optPositionOffset, d)
	if e != d {
		m.ProjectOut = b.matrix(p+"project_out.weight", e, d)
		m.ProjectIn = b.matrix(p+"project_in.weight", d, e)
	}
	if !c.NoFinalNorm {
		m.Norm = b.vector(p+"final_layer_norm.weight", d)
		m.NormBias = b.vector(p+"final_layer_norm.bias", d)
	}
	for i := 0; i < c.NumLayers && b.err == nil; i++ { // a missing tensor ends the build (buildLlama)
		lp := fmt.Sprintf(p+"layers.%d.", i)
		var l Layer
		a := lp + "self_attn."
		l.Attn.K, l.Attn.KBias = b.matrix(a+"k_proj.weight", d, d), b.vector(a+"k_proj.bias", d)
		l.Attn.V, l.Attn.VBias = b.matrix(a+"v_proj.weight", d, d), b.vector(a+"v_proj.bias", d)
		l.Attn.Q, l.Attn.QBias = b.matrix(a+"q_proj.weight", d, d), b.vector(a+"q_proj.bias", d)
		l.Attn.O, l.Attn.OBias = b.matrix(a+"out_proj.weight", d, d), b.vector(a+"out_proj.bias", d)
		l.AttnNorm, l.AttnNormBias = b.vector(lp+"self_attn_layer_norm.weight", d), b.vector(lp+"self_attn_layer_norm.bias", d)
		l.MLP.Up, l.MLP.UpBias = b.matrix(lp+"fc1.weight", f, d), b.vector(lp+"fc1.bias", f)
		l.MLP.Down, l.MLP.DownBias = b.matrix(lp+"fc2.weight", d, f), b.vector(lp+"fc2.bias", d)
		l.MLPNorm, l.MLPNormBias = b.vector(lp+"final_layer_norm.weight", d), b.vector(lp+"final_layer_norm.bias", d)
		m.Layers = append(m.Layers, l)
	}
	if c.TieEmbeddings {
		m.LMHead = m.Embed
	} else {
		m.LMHead = b.matrix("lm_head.weight", c.VocabSize, e)
	}
}

// optEmbed is OPT's embedding (OPTDecoder.forward): the token embeddings
// (the prompt's virtual tokens first, as PEFT puts its inputs_embeds),
// through project_in where they are narrower, plus the learned positions'
// rows p+2.
func (m *Model) optEmbed(x tensor.Buf, tokens, positions []int, b, tn int, prompt []float32, weights []*tensor.Perturbation) {
	be, n, ids := m.Backend, b*tn, m.optIDs()
	tok := x
	if m.ProjectIn != nil {
		tok = be.Alloc(n * m.embedDim())
	}
	m.tokenRows(tok, tokens, b, tn, prompt, perturbationOf(weights, m.embedID()))
	if m.ProjectIn != nil {
		m.matMul(x, tok, n, m.ProjectIn, ids.projectIn, []span{{0, 1, nil, weights}}, []int{n}, false)
		be.Free(tok)
	}
	rows := make([]int, n)
	for i, p := range positions {
		rows[i] = p + optPositionOffset
	}
	pos := be.Alloc(n * m.HiddenSize)
	if pt := perturbationOf(weights, ids.positions); pt != nil {
		be.(tensor.Trainer).RowsPerturbed(pos, m.Positions, rows, pt)
	} else {
		be.Rows(pos, m.Positions, rows)
	}
	be.Add(x, pos)
	be.Free(pos)
}

// optLayer is layerForward for OPT (OPTDecoderLayer.forward):
//
//	x += O(Attention(Q(xn), K(xn), V(xn))) + bo       xn = AttnNorm(x)
//	x += Down(relu(Up(xn) + bu)) + bd                 xn = MLPNorm(x)
//
// with every projection's bias added after its product (q, k and v too,
// before each span's LoRA terms, as PEFT adds them). Post-norm (OPT-350m):
// x = AttnNorm(x + attention(x)), then x = MLPNorm(x + MLP(x)). Each block's
// output is formed apart, bias included, and then added to the residual, as
// HF rounds it.
func (m *Model) optLayer(l int, x tensor.Buf, p *pass, keep []int) tensor.Buf {
	be, L, ids, d := m.Backend, &m.Layers[l], m.optLayerIDs(l), m.HiddenSize
	spans, tn, ws := p.spans, p.tn, p.ws
	rows := spanRows(spans, tn, nil)
	in := x
	if !m.PostNorm {
		m.norm(ws.xn, x, L.AttnNorm, L.AttnNormBias, d, ids.attnNorm, ids.attnNormBias, spans, rows, 1)
		in = ws.xn
	}
	m.optAttention(l, in, p, rows)
	out, attn, n := x, ws.attn, p.c.b*tn
	if keep != nil {
		out, attn, ws = m.keepOnly(x, ws, keep)
		n, rows = len(keep), spanRows(spans, tn, keep)
	}
	t := ws.xn.Slice(0, n*d) // the block's output (xn is free once q, k and v are formed)
	m.matMul(t, attn, n, L.Attn.O, ids.o, spans, rows, false)
	m.addBias(t, L.Attn.OBias, d, ids.oBias, spans, rows)
	m.loraTerm(l, ProjO, t, attn, spans, rows, ws)
	be.Add(out, t)
	if m.PostNorm {
		m.norm(out, out, L.AttnNorm, L.AttnNormBias, d, ids.attnNorm, ids.attnNormBias, spans, rows, 1)
	}
	m.optMLP(l, out, n, spans, rows, ws)
	return out
}

// optAttention writes into p.ws.attn the attention output of every row of
// layer l's input in (normed, or x itself post-norm): the q, k, v
// projections with their biases and each span's LoRA terms, then
// attention over the cache with HF's scaling head_dim^−½ (HF scales q
// before the product, the backend the product: the same bits where the
// scale is a power of two, as for OPT's heads of 64).
func (m *Model) optAttention(l int, in tensor.Buf, p *pass, rows []int) {
	c, tn, spans, ws := p.c, p.tn, p.spans, p.ws
	A, ids, n, d := &m.Layers[l].Attn, m.optLayerIDs(l), c.b*tn, m.HiddenSize
	for _, proj := range []struct {
		dst      tensor.Buf
		w        tensor.Weight
		bias     tensor.Buf
		wID, bID int
		p        Proj
	}{{ws.q, A.Q, A.QBias, ids.q, ids.qBias, ProjQ}, {ws.k, A.K, A.KBias, ids.k, ids.kBias, ProjK}, {ws.v, A.V, A.VBias, ids.v, ids.vBias, ProjV}} {
		m.matMul(proj.dst, in, n, proj.w, proj.wID, spans, rows, false)
		m.addBias(proj.dst, proj.bias, d, proj.bID, spans, rows)
		m.loraTerm(l, proj.p, proj.dst, in, spans, rows, ws)
	}
	m.Backend.Attention(ws.attn, ws.q, ws.k, ws.v, c.store, c.layer(l), tensor.AttentionArgs{
		Seqs: c.b, Tokens: tn, Heads: m.NumHeads, KVHeads: m.NumKVHeads, HeadDim: m.HeadDim,
		Start: c.len, Mask: c.mask, Scale: float32(1 / math.Sqrt(float64(m.HeadDim))),
	})
}

// optMLP adds layer l's MLP to the n rows of x (pre-norm: of its normed
// input; post-norm: of x, then MLPNorm of the sum).
func (m *Model) optMLP(l int, x tensor.Buf, n int, spans []span, rows []int, ws *workspace) {
	be, L, ids, d, f := m.Backend, &m.Layers[l], m.optLayerIDs(l), m.HiddenSize, m.IntermediateSize
	in := x
	if !m.PostNorm {
		m.norm(ws.xn, x, L.MLPNorm, L.MLPNormBias, d, ids.mlpNorm, ids.mlpNormBias, spans, rows, 1)
		in = ws.xn
	}
	h := ws.up.Slice(0, n*f)
	m.matMul(h, in, n, L.MLP.Up, ids.up, spans, rows, false)
	m.addBias(h, L.MLP.UpBias, f, ids.upBias, spans, rows)
	m.loraTerm(l, ProjUp, h, in, spans, rows, ws)
	be.ReLU(h)
	t := ws.xn.Slice(0, n*d)
	m.matMul(t, h, n, L.MLP.Down, ids.down, spans, rows, false)
	m.addBias(t, L.MLP.DownBias, d, ids.downBias, spans, rows)
	m.loraTerm(l, ProjDown, t, h, spans, rows, ws)
	be.Add(x, t)
	if m.PostNorm {
		m.norm(x, x, L.MLPNorm, L.MLPNormBias, d, ids.mlpNorm, ids.mlpNormBias, spans, rows, 1)
	}
}

// optTensors is Tensors for OPT, in OPTForCausalLM's named_parameters
// order: embed_tokens, embed_positions, project_out and project_in (where
// the embeddings are narrower), the final LayerNorm's weight and bias
// (pre-norm), then each layer's k_proj, v_proj, q_proj, out_proj (each
// weight then bias), self_attn_layer_norm, fc1, fc2 and final_layer_norm;
// lm_head unless tied. Layer is −1 for what acts before the first layer
// (the embeddings, the positions, project_in) and NumLayers for what acts
// after the last (the final norm, project_out, an untied head).
func (m *Model) optTensors() ([]Tensor, error) {
	tl := &tensorList{m: m}
	const p = "model.decoder."
	tl.matrix(p+"embed_tokens.weight", -1, m.Embed)
	tl.matrix(p+"embed_positions.weight", -1, m.Positions)
	if m.ProjectOut != nil {
		tl.matrix(p+"project_out.weight", m.NumLayers, m.ProjectOut)
		tl.matrix(p+"project_in.weight", -1, m.ProjectIn)
	}
	if m.Norm != nil {
		tl.vector(p+"final_layer_norm.weight", m.NumLayers, m.Norm)
		tl.vector(p+"final_layer_norm.bias", m.NumLayers, m.NormBias)
	}
	for l := range m.Layers {
		L, lp := &m.Layers[l], fmt.Sprintf(p+"layers.%d.", l)
		for _, t := range []struct {
			name string
			w    tensor.Weight // a projection's weight, or
			v    tensor.Buf    // a LayerNorm's
			bias tensor.Buf
		}{
			{"self_attn.k_proj", L.Attn.K, nil, L.Attn.KBias}, {"self_attn.v_proj", L.Attn.V, nil, L.Attn.VBias},
			{"self_attn.q_proj", L.Attn.Q, nil, L.Attn.QBias}, {"self_attn.out_proj", L.Attn.O, nil, L.Attn.OBias},
			{"self_attn_layer_norm", nil, L.AttnNorm, L.AttnNormBias},
			{"fc1", L.MLP.Up, nil, L.MLP.UpBias}, {"fc2", L.MLP.Down, nil, L.MLP.DownBias},
			{"final_layer_norm", nil, L.MLPNorm, L.MLPNormBias},
		} {
			if t.w != nil {
				tl.matrix(lp+t.name+".weight", l, t.w)
			} else {
				tl.vector(lp+t.name+".weight", l, t.v)
			}
			tl.vector(lp+t.name+".bias", l, t.bias)
		}
	}
	if !m.TieEmbeddings {
		tl.matrix("lm_head.weight", m.NumLayers, m.LMHead)
	}
	return tl.ts, nil
}

// optModelIDs are the positions in Tensors of an OPT model's tensors
// outside its layers (−1: the model has none), and of its first layer's.
type optModelIDs struct {
	positions, projectOut, projectIn, norm, normBias, firstLayer, head int
}

// optIDs lays out optTensors' list (embed_tokens is 0).
func (m *Model) optIDs() optModelIDs {
	ids := optModelIDs{positions: 1, projectOut: -1, projectIn: -1, norm: -1, normBias: -1}
	i := 2
	if m.embedDim() != m.HiddenSize {
		ids.projectOut, ids.projectIn = i, i+1
		i += 2
	}
	if !m.NoFinalNorm {
		ids.norm, ids.normBias = i, i+1
		i += 2
	}
	ids.firstLayer, ids.head = i, i+optPerLayer*m.NumLayers
	return ids
}

// optLayerTensorIDs are the positions in Tensors of an OPT layer's tensors.
type optLayerTensorIDs struct {
	k, kBias, v, vBias, q, qBias, o, oBias, attnNorm, attnNormBias, up, upBias, down, downBias, mlpNorm, mlpNormBias int
}

// optLayerIDs gives layer l's tensors' positions, in optTensors' order.
func (m *Model) optLayerIDs(l int) optLayerTensorIDs {
	i := m.optIDs().firstLayer + optPerLayer*l
	return optLayerTensorIDs{i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7, i + 8, i + 9, i + 10, i + 11, i + 12, i + 13, i + 14, i + 15}
}
