package model

import (
	"fmt"
	"math"
	"sync"

	"github.com/meazo-go/meazo/tensor"
)

// kvCache holds the keys and values of every layer for a batch of B rows,
// one buffer per (row, kv head) in the packed layout tensor.Attend reads
// (tensor.KVHeadLen), so attending never repacks them. mask[b·capacity+s]
// says whether slot s of row b holds a real token.
//
// A forward that is not continued later (training, scoring) needs the keys
// of one layer at a time: its cache is "scratch", one buffer all layers share.
type kvCache struct {
	b, capacity, len int
	kLen, vLen       int // floats per (row, kv head) in k[l] and v[l]
	kvHeads          int // kv heads per row
	k, v             [][]float32
	mask             []int
	scratch          bool
}

func (m *Model) newCache(b, capacity int, scratch bool) *kvCache {
	c := &kvCache{b: b, capacity: capacity, mask: make([]int, b*capacity), scratch: scratch, kvHeads: m.NumKVHeads}
	c.kLen, c.vLen = tensor.KVHeadLen(capacity, m.HeadDim)
	layers := len(m.Layers)
	if scratch {
		layers = 1
	}
	heads := b * m.NumKVHeads
	for range layers {
		c.k = append(c.k, make([]float32, heads*c.kLen))
		c.v = append(c.v, make([]float32, heads*c.vLen))
	}
	return c
}

// rows returns a view of a scratch cache for its first nb rows (the buffers
// are laid out row by row, so a prefix of them is a smaller cache).
func (c *kvCache) rows(nb int) *kvCache {
	v := *c
	v.b = nb
	heads := nb * c.kvHeads
	v.k = [][]float32{c.k[0][:heads*c.kLen]}
	v.v = [][]float32{c.v[0][:heads*c.vLen]}
	v.mask = c.mask[:nb*c.capacity]
	return &v
}

// layer returns the cache index that layer l stores its keys in.
func (c *kvCache) layer(l int) int {
	if c.scratch {
		return 0
	}
	return l
}

// checkInput validates an Input against the model.
func (m *Model) checkInput(in Input) error {
	n := in.B * in.T
	if in.B <= 0 || in.T <= 0 {
		return fmt.Errorf("empty batch (B=%d, T=%d)", in.B, in.T)
	}
	if len(in.Tokens) != n {
		return fmt.Errorf("input_ids has %d entries, want B·T = %d", len(in.Tokens), n)
	}
	for i, id := range in.Tokens {
		if id < 0 || id >= m.VocabSize {
			return fmt.Errorf("input_ids[%d][%d] = %d is outside the vocabulary [0, %d)", i/in.T, i%in.T, id, m.VocabSize)
		}
	}
	if in.Mask != nil {
		if len(in.Mask) != n {
			return fmt.Errorf("attention_mask has %d entries, want %d", len(in.Mask), n)
		}
		for i, v := range in.Mask {
			if v != 0 && v != 1 {
				return fmt.Errorf("attention_mask[%d][%d] = %d, want 0 or 1", i/in.T, i%in.T, v)
			}
		}
	}
	if in.Positions != nil {
		if len(in.Positions) != n {
			return fmt.Errorf("position_ids has %d entries, want %d", len(in.Positions), n)
		}
		for i, p := range in.Positions {
			if p < 0 || p >= 1<<24 {
				return fmt.Errorf("position_ids[%d][%d] = %d is outside [0, 2^24)", i/in.T, i%in.T, p)
			}
		}
	}
	return nil
}

// Forward runs the batch through the model and returns what opts asks for.
// With only Labels set, the LM head runs only at the positions the loss
// needs, which is most of the saving in ZO training.
func (m *Model) Forward(in Input, opts Options) (*Output, error) {
	if err := m.checkInput(in); err != nil {
		return nil, err
	}
	if opts.Labels != nil && len(opts.Labels) != in.B*in.T {
		return nil, fmt.Errorf("labels has %d entries, want B·T = %d", len(opts.Labels), in.B*in.T)
	}
	if m.Prompt != nil {
		nv, err := m.promptLength(m.Prompt)
		if err != nil {
			return nil, err
		}
		seq := withVirtualTokens(in, opts.Labels, nv)
		in, opts.Labels = seq.in, seq.labels
	}
	mask, positions := in.Mask, in.Positions
	if mask == nil {
		mask = ones(in.B * in.T)
	}
	if positions == nil {
		positions = make([]int, in.B*in.T)
		for i := range positions {
			positions[i] = i % in.T
		}
	}
	cache := m.newCache(in.B, in.T, true)
	out := &Output{}
	var hidden *[][]float32
	if opts.HiddenStates {
		hidden = &out.HiddenStates
	}
	h := m.step(cache, in.Tokens, mask, positions, in.T, oneSpan(in.B, m.Adapter), hidden)

	if opts.Logits {
		out.Logits = make([]float32, in.B*in.T*m.VocabSize)
		tensor.MatMulPacked(out.Logits, h, in.B*in.T, m.LMHead)
	}
	if opts.Labels != nil {
		if err := m.loss(out, h, in.B, in.T, opts.Labels); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loss computes HF's causal-LM loss: logits at position t predict
// labels[t+1]; the batch loss is the mean over all supervised tokens
// (token-weighted), accumulated in float64. If out.Logits is set it is
// reused; otherwise the LM head runs only at supervised positions.
func (m *Model) loss(out *Output, h []float32, b, t int, labels []int) error {
	ce, seqOf, err := m.tokenCE(h, out.Logits, b, t, labels)
	if err != nil {
		return err
	}
	sum := make([]float64, b)
	count := make([]int, b)
	var total float64
	for i, c := range ce {
		sum[seqOf[i]] += c
		count[seqOf[i]]++
		total += c
	}
	out.Tokens = len(ce)
	out.Loss = math.NaN()
	if len(ce) > 0 {
		out.Loss = total / float64(len(ce))
	}
	out.LossPerSeq = make([]float64, b)
	for s := range sum {
		out.LossPerSeq[s] = math.NaN()
		if count[s] > 0 {
			out.LossPerSeq[s] = sum[s] / float64(count[s])
		}
	}
	return nil
}

// tokenCE returns the cross-entropy of every supervised token of b
// sequences of length t, in sequence-then-position order, and the sequence
// each belongs to. Labels are unshifted (HF's convention): the logits at
// position i are scored against labels[i+1]. logits, if not nil, holds the
// logits of every position; otherwise the LM head runs on the hidden states
// h of the supervised positions only.
func (m *Model) tokenCE(h, logits []float32, b, t int, labels []int) (ce []float64, seqOf []int, err error) {
	var rows, targets []int
	for s := 0; s < b; s++ {
		for i := 0; i+1 < t; i++ {
			y := labels[s*t+i+1]
			if y == -100 {
				continue
			}
			if y < 0 || y >= m.VocabSize {
				return nil, nil, fmt.Errorf("labels[%d][%d] = %d is outside the vocabulary [0, %d)", s, i+1, y, m.VocabSize)
			}
			rows = append(rows, s*t+i)
			targets = append(targets, y)
			seqOf = append(seqOf, s)
		}
	}
	v, d := m.VocabSize, m.HiddenSize
	if logits == nil {
		sel := make([]float32, len(rows)*d)
		for i, r := range rows {
			copy(sel[i*d:(i+1)*d], h[r*d:(r+1)*d])
		}
		logits = make([]float32, len(rows)*v)
		tensor.MatMulPacked(logits, sel, len(rows), m.LMHead)
		for i := range rows {
			rows[i] = i
		}
	}
	ce = make([]float64, len(rows))
	tensor.ParallelFor(len(rows), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := logits[rows[i]*v : (rows[i]+1)*v]
			ce[i] = tensor.LogSumExp(row) - float64(row[targets[i]])
		}
	})
	return ce, seqOf, nil
}

// span is a run of consecutive sequences [lo, hi) that share one adapter.
type span struct {
	lo, hi  int
	adapter *Adapter
}

// oneSpan applies a single adapter (possibly nil) to all b sequences.
func oneSpan(b int, a *Adapter) []span { return []span{{0, b, a}} }

// embed looks up the embedding rows of tokens into x [len(tokens)][hidden].
func (m *Model) embed(x []float32, tokens []int) {
	d := m.HiddenSize
	tensor.ParallelFor(len(tokens), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			m.Embed.Row(x[i*d:(i+1)*d], tokens[i])
		}
	})
}

// step runs tn new tokens per row (tokens, mask and positions are [B·tn])
// through every layer, appending their keys and values to the cache, and
// returns the final-norm hidden states [B·tn][hidden]. If hidden is not nil,
// HF's output_hidden_states are appended to it.
//
// On the first step, if m.Prompt is set, the first rows of each sequence are
// its virtual tokens (see withVirtualTokens) and get the prompt embeddings.
func (m *Model) step(c *kvCache, tokens, mask, positions []int, tn int, spans []span, hidden *[][]float32) []float32 {
	n, d := c.b*tn, m.HiddenSize
	for b := 0; b < c.b; b++ {
		copy(c.mask[b*c.capacity+c.len:], mask[b*tn:(b+1)*tn])
	}
	x := make([]float32, n*d)
	m.embed(x, tokens)
	if m.Prompt != nil && c.len == 0 {
		for b := 0; b < c.b; b++ {
			copy(x[b*tn*d:], m.Prompt)
		}
	}
	rope := newRopeTable(m.invFreq, positions)
	ws := m.newWorkspace(n)
	for l := range m.Layers {
		if hidden != nil {
			*hidden = append(*hidden, append([]float32(nil), x...))
		}
		m.layerForward(l, x, c, rope, tn, spans, ws)
	}
	c.len += tn
	tensor.RMSNorm(x, x, m.Norm, n, d, m.RMSNormEps)
	if hidden != nil {
		*hidden = append(*hidden, append([]float32(nil), x...))
	}
	return x
}

// workspace holds the activations of one layer for n token rows, reused by
// every layer of a forward.
type workspace struct {
	xn, q, k, v, attn, proj, gate, up []float32
	ax, lora                          []float32 // LoRA intermediates, grown on demand
}

// rows returns a view of the workspace for its first n token rows.
func (ws *workspace) rows(m *Model, n int) *workspace {
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	return &workspace{
		xn: ws.xn[:n*m.HiddenSize], q: ws.q[:n*qd], k: ws.k[:n*kvd], v: ws.v[:n*kvd], attn: ws.attn[:n*qd],
		proj: ws.proj[:n*m.HiddenSize], gate: ws.gate[:n*m.IntermediateSize], up: ws.up[:n*m.IntermediateSize],
		ax: ws.ax, lora: ws.lora,
	}
}

func (m *Model) newWorkspace(n int) *workspace {
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	return &workspace{
		xn:   make([]float32, n*m.HiddenSize),
		q:    make([]float32, n*qd),
		k:    make([]float32, n*kvd),
		v:    make([]float32, n*kvd),
		attn: make([]float32, n*qd),
		proj: make([]float32, n*m.HiddenSize),
		gate: make([]float32, n*m.IntermediateSize),
		up:   make([]float32, n*m.IntermediateSize),
	}
}

// layerForward applies decoder layer l to x [B·tn][hidden] in place. Each
// span of sequences gets its own adapter's low-rank terms.
func (m *Model) layerForward(l int, x []float32, c *kvCache, rope *ropeTable, tn int, spans []span, ws *workspace) {
	layer := &m.Layers[l]
	n, d, hd := c.b*tn, m.HiddenSize, m.HeadDim

	// Attention block.
	tensor.RMSNorm(ws.xn, x, layer.AttnNorm, n, d, m.RMSNormEps)
	a := &layer.Attn
	tensor.MatMulPacked(ws.q, ws.xn, n, a.Q)
	tensor.MatMulPacked(ws.k, ws.xn, n, a.K)
	tensor.MatMulPacked(ws.v, ws.xn, n, a.V)
	for _, sp := range spans {
		if sp.adapter == nil {
			continue
		}
		la := sp.adapter.Layers[l]
		lo, hi := sp.lo*tn, sp.hi*tn
		m.addLoRA(ws.q[lo*a.Q.N:hi*a.Q.N], ws.xn[lo*d:hi*d], hi-lo, a.Q.N, la.Q, ws)
		m.addLoRA(ws.v[lo*a.V.N:hi*a.V.N], ws.xn[lo*d:hi*d], hi-lo, a.V.N, la.V, ws)
	}
	if a.QNorm != nil {
		tensor.RMSNorm(ws.q, ws.q, a.QNorm, n*m.NumHeads, hd, m.RMSNormEps)
		tensor.RMSNorm(ws.k, ws.k, a.KNorm, n*m.NumKVHeads, hd, m.RMSNormEps)
	}
	tensor.ParallelFor(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			p := r % rope.rows // variants of one batch share its positions
			for h := 0; h < m.NumHeads; h++ {
				rope.apply(ws.q[(r*m.NumHeads+h)*hd:(r*m.NumHeads+h+1)*hd], p)
			}
			for h := 0; h < m.NumKVHeads; h++ {
				rope.apply(ws.k[(r*m.NumKVHeads+h)*hd:(r*m.NumKVHeads+h+1)*hd], p)
			}
		}
	})
	m.attention(c.layer(l), c, ws, tn)
	tensor.MatMulPacked(ws.proj, ws.attn, n, a.O)
	tensor.Add(x, ws.proj)

	// MLP block.
	tensor.RMSNorm(ws.xn, x, layer.MLPNorm, n, d, m.RMSNormEps)
	tensor.MatMulPacked(ws.gate, ws.xn, n, layer.MLP.Gate)
	tensor.MatMulPacked(ws.up, ws.xn, n, layer.MLP.Up)
	tensor.SiLUMul(ws.gate, ws.up)
	tensor.MatMulPacked(ws.proj, ws.gate, n, layer.MLP.Down)
	tensor.Add(x, ws.proj)
}

// addLoRA adds PEFT's low-rank term Scale·(x·Aᵀ)·Bᵀ to y [n][out], after
// the base projection, as PEFT orders it. A nil lora adds nothing.
func (m *Model) addLoRA(y, x []float32, n, out int, lora *LoRA, ws *workspace) {
	if lora == nil {
		return
	}
	if cap(ws.ax) < n*lora.R {
		ws.ax = make([]float32, n*lora.R)
	}
	ax := ws.ax[:n*lora.R]
	tensor.MatMulNT(ax, x, lora.A, n, lora.R, m.HiddenSize)
	if cap(ws.lora) < n*out {
		ws.lora = make([]float32, n*out)
	}
	bax := ws.lora[:n*out]
	tensor.MatMulNT(bax, ax, lora.B, n, out, lora.R)
	for i, v := range bax {
		y[i] += v * lora.Scale
	}
}

// attention stores this step's keys and values in the cache and computes
// causal, padding-masked softmax(q·kᵀ/√hd)·v for every query head, writing
// ws.attn [B·tn][heads·hd]. The work is split over (row, kv head) pairs, one
// per task: the rep query heads that share a kv head are stacked position by
// position (row t·rep+j is head g·rep+j at position t), so each group of four
// stacked rows sees about the same number of keys, and the kernel skips the
// keys the causal mask hides.
func (m *Model) attention(l int, c *kvCache, ws *workspace, tn int) {
	hd, kvh, heads := m.HeadDim, m.NumKVHeads, m.NumHeads
	rep := heads / kvh
	scale := float32(1 / math.Sqrt(float64(hd)))
	kc, vc := c.k[l], c.v[l]
	rows := rep * tn
	tensor.ParallelTasks(c.b*kvh, func(task int) {
		b, g := task/kvh, task%kvh
		kh, vh := kc[task*c.kLen:(task+1)*c.kLen], vc[task*c.vLen:(task+1)*c.vLen]
		for t := 0; t < tn; t++ {
			src := ((b*tn+t)*kvh + g) * hd
			tensor.StoreKV(kh, vh, c.capacity, hd, c.len+t, ws.k[src:src+hd], ws.v[src:src+hd])
		}
		sc := getAttnBuf(rows, hd)
		defer attnBufs.Put(sc)
		for t := 0; t < tn; t++ {
			src := ((b*tn+t)*heads + g*rep) * hd // the rep heads of group g are adjacent
			copy(sc.q[t*rep*hd:(t+1)*rep*hd], ws.q[src:src+rep*hd])
			for j := 0; j < rep; j++ {
				sc.pos[t*rep+j] = c.len + t
			}
		}
		keyOK := c.mask[b*c.capacity : (b+1)*c.capacity]
		tensor.Attend(sc.out, sc.q, sc.pos, kh, vh, c.capacity, hd, keyOK, m.SlidingWindow, scale)
		for t := 0; t < tn; t++ {
			dst := ((b*tn+t)*heads + g*rep) * hd
			copy(ws.attn[dst:dst+rep*hd], sc.out[t*rep*hd:(t+1)*rep*hd])
		}
	})
}

// attnBuf is one attention task's stacked queries, outputs and query slots.
type attnBuf struct {
	q, out []float32
	pos    []int
}

var attnBufs sync.Pool

func getAttnBuf(rows, hd int) *attnBuf {
	sc, _ := attnBufs.Get().(*attnBuf)
	if sc == nil || cap(sc.q) < rows*hd || cap(sc.pos) < rows {
		sc = &attnBuf{q: make([]float32, rows*hd), out: make([]float32, rows*hd), pos: make([]int, rows)}
	}
	sc.q, sc.out, sc.pos = sc.q[:rows*hd], sc.out[:rows*hd], sc.pos[:rows]
	return sc
}

func ones(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = 1
	}
	return o
}
