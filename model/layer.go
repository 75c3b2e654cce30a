package model

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// One decoder layer of a forward (layerForward, as the model's family
// computes it: llamaLayer here, optLayer in opt.go): self-attention with its
// per-span LoRA terms and the KV cache, then the MLP, on a workspace of
// activations that every layer of the forward reuses (all of them in the
// pass that the forward hands each layer).

// pass is what every decoder layer of one forward reads alike: the KV
// cache the layers append to, the RoPE tables of the new tokens' positions,
// the number tn of new tokens per sequence, the spans of sequences with
// their adapters and perturbations, and the workspace of activations.
// step builds one for all its layers, variantPass.layer one per layer (the
// members in flight change), so that each layer function takes the layer,
// its input and the pass rather than the same five values one by one.
type pass struct {
	c     *kvCache
	rope  *rope // nil for a model without RoPE (OPT)
	tn    int
	spans []span
	ws    *workspace
}

// workspace holds the activations of one layer for n token rows, reused by
// every layer of a forward.
type workspace struct {
	xn, q, k, v, attn, gate, up tensor.Buf
	stack                       tensor.Buf   // a stacked product before its split; nil unless the model stacks
	lora                        *loraScratch // shared by a workspace's views
}

// loraScratch holds the LoRA intermediates, grown on demand.
type loraScratch struct {
	ax tensor.Buf // x·Aᵀ [n][r]
}

// rows returns a view of the workspace for its first n token rows.
func (ws *workspace) rows(m *Model, n int) *workspace {
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	return &workspace{
		xn: ws.xn.Slice(0, n*m.HiddenSize), q: ws.q.Slice(0, n*qd), k: ws.k.Slice(0, n*kvd), v: ws.v.Slice(0, n*kvd),
		attn: ws.attn.Slice(0, n*qd),
		gate: stackView(ws.gate, n*m.IntermediateSize), up: ws.up.Slice(0, n*m.IntermediateSize),
		stack: stackView(ws.stack, n*m.stackWidth()),
		lora:  ws.lora,
	}
}

// stackView is b's first n values, or nil for a nil b (a buffer the
// model does not use: a stack, the gate of an MLP without one).
func stackView(b tensor.Buf, n int) tensor.Buf {
	if b == nil {
		return nil
	}
	return b.Slice(0, n)
}

// stackWidth is the widest stacked product's row (0 when nothing is stacked).
func (m *Model) stackWidth() int {
	w := 0
	if len(m.Layers) == 0 {
		return 0
	}
	if l := &m.Layers[0]; l.Attn.QKV != nil || l.MLP.GateUp != nil {
		kvd := m.NumKVHeads * m.HeadDim
		w = max(m.NumHeads*m.HeadDim+2*kvd, 2*m.IntermediateSize)
	}
	return w
}

// free releases the workspace's buffers (not to be called on a view).
func (ws *workspace) free(be tensor.Backend) {
	be.Free(ws.xn, ws.q, ws.k, ws.v, ws.attn, ws.up)
	for _, b := range []tensor.Buf{ws.gate, ws.stack, ws.lora.ax} {
		if b != nil {
			be.Free(b)
		}
	}
}

func (m *Model) newWorkspace(n int) *workspace {
	be := m.Backend
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	ws := &workspace{
		xn:   be.Alloc(n * m.HiddenSize),
		q:    be.Alloc(n * qd),
		k:    be.Alloc(n * kvd),
		v:    be.Alloc(n * kvd),
		attn: be.Alloc(n * qd),
		up:   be.Alloc(n * m.IntermediateSize),
		lora: &loraScratch{},
	}
	if !m.IsOPT() { // the gated MLP's second product (OPT's fc1 uses up alone)
		ws.gate = be.Alloc(n * m.IntermediateSize)
	}
	if w := m.stackWidth(); w > 0 {
		ws.stack = be.Alloc(n * w)
	}
	return ws
}

// unstacked computes x [n][k] times a stacked weight, whose rows are the
// parts' matrices one on top of the other, and splits the product into
// dsts: part p is counts[p] column blocks of width per token row, in
// order. The split is a Gather over the product viewed as rows of width.
func (m *Model) unstacked(dsts []tensor.Buf, stack, x tensor.Buf, n int, w tensor.Weight, width int, counts []int) {
	be, period := m.Backend, 0
	for _, c := range counts {
		period += c
	}
	be.MatMul(stack.Slice(0, n*period*width), x, n, w)
	first := 0
	for p, dst := range dsts {
		ids := make([]int, 0, n*counts[p])
		for t := range n {
			for i := range counts[p] {
				ids = append(ids, t*period+first+i)
			}
		}
		be.Gather(dst, stack, width, ids)
		first += counts[p]
	}
}

// layerForward applies decoder layer l to x [B·tn][hidden] (the B
// sequences of tn new tokens of the pass p) in place, as the model's
// family computes a layer (family.layer: llamaLayer, optLayer). Each of
// p's spans of sequences gets its own adapter's low-rank terms on the
// projections that adapter updates (loraTerm), and reads the layer's
// weights as it perturbs them (full-parameter ZO).
//
// With keep nil it returns x. Otherwise only the rows keep of the result
// are needed (the last layer of a forward whose loss reads a few
// positions): every row's keys and values still go to the cache and every
// query is attended, but the output projection, the residual adds and the
// MLP run on the rows keep alone, which layerForward returns as a new
// buffer [len(keep)][hidden] in keep's order (x is left as it was after
// attention). Each row's arithmetic is the same either way.
func (m *Model) layerForward(l int, x tensor.Buf, p *pass, keep []int) tensor.Buf {
	return m.fam.layer(m, l, x, p, keep)
}

// llamaLayer is layerForward for Llama, Qwen2 and Qwen3:
//
//	x += O(Attention(RoPE(Q(xn)), RoPE(K(xn)), V(xn)))   xn = AttnNorm(x)
//	x += Down(silu(Gate(xn)) · Up(xn))                   xn = MLPNorm(x)
//
// each projection plus its bias where the config gives it one (Qwen2's q,
// k and v; Llama's and Qwen3's attention_bias, Llama's mlp_bias).
func (m *Model) llamaLayer(l int, x tensor.Buf, p *pass, keep []int) tensor.Buf {
	spans, tn, ws := p.spans, p.tn, p.ws
	rows := spanRows(spans, tn, nil)
	m.selfAttention(l, x, p, rows)
	out, attn, n := x, ws.attn, p.c.b*tn
	if keep != nil {
		out, attn, ws = m.keepOnly(x, ws, keep)
		n, rows = len(keep), spanRows(spans, tn, keep)
	}
	ids, a := m.layerIDs(l), &m.Layers[l].Attn
	m.residualMatMul(out, attn, n, residual{a.O, ids.o, a.OBias, ids.oBias, l, ProjO}, spans, rows, ws)
	m.mlp(l, out, n, spans, rows, ws)
	return out
}

// residual is a projection whose output residualMatMul adds to the
// residual stream: its weight and bias with their tensor ids, and which
// of layer l's projections it is (for the LoRA terms).
type residual struct {
	w      tensor.Weight
	wID    int
	bias   tensor.Buf
	bID, l int
	p      Proj
}

// residualMatMul adds x·Wᵀ + bias + each span's LoRA term of r to the n
// rows of the residual stream out. With neither a bias nor a LoRA term the
// product is added in place (MatMulAdd); otherwise the projection's output
// is formed apart in ws.xn (free once the block's input is projected),
// bias and LoRA term included, and then added, as HF rounds it.
func (m *Model) residualMatMul(out, x tensor.Buf, n int, r residual, spans []span, rows []int, ws *workspace) {
	if r.bias == nil && !hasLoRA(spans, r.l, r.p) {
		m.matMul(out, x, n, r.w, r.wID, spans, rows, true)
		return
	}
	d := m.HiddenSize
	t := ws.xn.Slice(0, n*d)
	m.matMul(t, x, n, r.w, r.wID, spans, rows, false)
	m.addBias(t, r.bias, d, r.bID, spans, rows)
	m.loraTerm(r.l, r.p, t, x, spans, rows, ws)
	m.Backend.Add(out, t)
}

// selfAttention writes into p.ws.attn the attention output of every row
// of layer l's input x (before the output projection): norm, the Q, K, V
// projections with each span's LoRA terms, Qwen3's per-head norms, RoPE,
// and attention over the cache, which takes every row's keys and values.
func (m *Model) selfAttention(l int, x tensor.Buf, p *pass, rows []int) {
	be, a, ids := m.Backend, &m.Layers[l].Attn, m.layerIDs(l)
	c, rope, tn, spans, ws := p.c, p.rope, p.tn, p.spans, p.ws
	n, d, hd := c.b*tn, m.HiddenSize, m.HeadDim
	kvd := m.NumKVHeads * hd
	m.rmsNorm(ws.xn, x, m.Layers[l].AttnNorm, d, ids.attnNorm, spans, rows, 1)
	if a.QKV != nil { // one product, split into q (heads/kv blocks of kvd per token), k and v
		m.unstacked([]tensor.Buf{ws.q, ws.k, ws.v}, ws.stack, ws.xn, n, a.QKV, kvd, []int{m.NumHeads / m.NumKVHeads, 1, 1})
	} else {
		m.matMul(ws.q, ws.xn, n, a.Q, ids.q, spans, rows, false)
		m.matMul(ws.k, ws.xn, n, a.K, ids.k, spans, rows, false)
		m.matMul(ws.v, ws.xn, n, a.V, ids.v, spans, rows, false)
	}
	// Biases (none: no work) after the products, the LoRA terms after
	// them: PEFT adds its term to the base Linear's output, bias included.
	m.addBias(ws.q, a.QBias, m.NumHeads*hd, ids.qBias, spans, rows)
	m.addBias(ws.k, a.KBias, kvd, ids.kBias, spans, rows)
	m.addBias(ws.v, a.VBias, kvd, ids.vBias, spans, rows)
	m.loraTerm(l, ProjQ, ws.q, ws.xn, spans, rows, ws)
	m.loraTerm(l, ProjK, ws.k, ws.xn, spans, rows, ws)
	m.loraTerm(l, ProjV, ws.v, ws.xn, spans, rows, ws)
	qcos, qsin := rope.queryTable()
	m.headNormRoPE(ws.q, a.QNorm, ids.qNorm, m.NumHeads, n, qcos, qsin, rope.rows, spans, rows)
	m.headNormRoPE(ws.k, a.KNorm, ids.kNorm, m.NumKVHeads, n, rope.cos, rope.sin, rope.rows, spans, rows)
	be.Attention(ws.attn, ws.q, ws.k, ws.v, c.store, c.layer(l), tensor.AttentionArgs{
		Seqs: c.b, Tokens: tn, Heads: m.NumHeads, KVHeads: m.NumKVHeads, HeadDim: hd,
		Start: c.len, Mask: c.mask, Window: m.SlidingWindow, Scale: float32(1 / math.Sqrt(float64(hd))),
	})
}

// headNormRoPE rotates the heads of x [n][heads·HeadDim] by RoPE (cos,
// sin of tableRows rows), after Qwen3's per-head norm (weight, tensor id)
// where the model has one: in one pass on a backend that fuses the two
// (tensor.NormRoPE) unless a span perturbs the norm's weight.
func (m *Model) headNormRoPE(x, weight tensor.Buf, id, heads, n int, cos, sin tensor.Buf, tableRows int, spans []span, rows []int) {
	be, hd := m.Backend, m.HeadDim
	if weight == nil {
		be.RoPE(x, n, heads, hd, cos, sin, tableRows)
		return
	}
	if f, ok := be.(tensor.NormRoPE); ok && segments(spans, rows, heads, id) == nil {
		f.RMSNormRoPE(x, weight, n, heads, hd, m.RMSNormEps, cos, sin, tableRows)
		return
	}
	m.rmsNorm(x, x, weight, hd, id, spans, rows, heads)
	be.RoPE(x, n, heads, hd, cos, sin, tableRows)
}

// loraTerm adds to each span's rows (rows[i] of them, span by span) of
// y, projection p's output in layer l, that span's LoRA term of p (none
// when its adapter has none) of the projection's input x.
func (m *Model) loraTerm(l int, p Proj, y, x tensor.Buf, spans []span, rows []int, ws *workspace) {
	pr, _ := m.projection(p)
	lo := 0
	for i, sp := range spans {
		if hi := lo + rows[i]; sp.adapter != nil {
			m.addLoRA(y.Slice(lo*pr.Out, hi*pr.Out), x.Slice(lo*pr.In, hi*pr.In), hi-lo, pr.In, pr.Out, *sp.adapter.Layers[l].Slot(p), ws)
		}
		lo += rows[i]
	}
}

// hasLoRA reports whether a span's adapter updates projection p of layer l.
func hasLoRA(spans []span, l int, p Proj) bool {
	for _, sp := range spans {
		if sp.adapter != nil && *sp.adapter.Layers[l].Slot(p) != nil {
			return true
		}
	}
	return false
}

// keepOnly returns, for the rows keep alone, a new buffer of their hidden
// states x, their attention outputs (in q's space, free now) and a view of
// the workspace for that many rows.
func (m *Model) keepOnly(x tensor.Buf, ws *workspace, keep []int) (out, attn tensor.Buf, kws *workspace) {
	be, n, qd := m.Backend, len(keep), m.NumHeads*m.HeadDim
	attn = ws.q.Slice(0, n*qd)
	be.Gather(attn, ws.attn, qd, keep)
	out = be.Alloc(n * m.HiddenSize)
	be.Gather(out, x, m.HiddenSize, keep)
	return out, attn, ws.rows(m, n)
}

// mlp adds layer l's gated MLP of its normed input to the n rows of x
// (with Llama's mlp_bias, each product plus its bias).
func (m *Model) mlp(l int, x tensor.Buf, n int, spans []span, rows []int, ws *workspace) {
	mlp, ids, f := &m.Layers[l].MLP, m.layerIDs(l), m.IntermediateSize
	m.rmsNorm(ws.xn, x, m.Layers[l].MLPNorm, m.HiddenSize, ids.mlpNorm, spans, rows, 1)
	if mlp.GateUp != nil {
		m.unstacked([]tensor.Buf{ws.gate, ws.up}, ws.stack, ws.xn, n, mlp.GateUp, f, []int{1, 1})
	} else {
		m.matMul(ws.gate, ws.xn, n, mlp.Gate, ids.gate, spans, rows, false)
		m.matMul(ws.up, ws.xn, n, mlp.Up, ids.up, spans, rows, false)
	}
	m.addBias(ws.gate, mlp.GateBias, f, ids.gateBias, spans, rows)
	m.addBias(ws.up, mlp.UpBias, f, ids.upBias, spans, rows)
	m.loraTerm(l, ProjGate, ws.gate, ws.xn, spans, rows, ws)
	m.loraTerm(l, ProjUp, ws.up, ws.xn, spans, rows, ws)
	m.Backend.SiLUMul(ws.gate, ws.up)
	m.residualMatMul(x, ws.gate, n, residual{mlp.Down, ids.down, mlp.DownBias, ids.downBias, l, ProjDown}, spans, rows, ws)
}

// addLoRA adds PEFT's low-rank term Scale·(x·Aᵀ)·Bᵀ to y [n][out] of x
// [n][in], after the base projection, as PEFT orders it. A nil lora adds
// nothing. A and B are the adapter's host values, handed to the backend on
// every call because training changes them between calls.
func (m *Model) addLoRA(y, x tensor.Buf, n, in, out int, lora *LoRA, ws *workspace) {
	if lora == nil {
		return
	}
	be, sc := m.Backend, ws.lora
	if sc.ax == nil || sc.ax.Len() < n*lora.R {
		if sc.ax != nil {
			be.Free(sc.ax)
		}
		sc.ax = be.Alloc(n * lora.R)
	}
	ax := sc.ax.Slice(0, n*lora.R)
	a, b := be.FromHost(lora.A), be.FromHost(lora.B)
	be.MatMulNT(ax, x, a, n, lora.R, in)
	be.MatMulNTAdd(y, ax, b, n, out, lora.R, lora.Scale)
	be.Free(a, b)
}
