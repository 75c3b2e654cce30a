package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/meazo-go/meazo/tensor"
)

// kvCache is the attention cache of a batch of b sequences: the backend's
// key/value store, and which of its slots hold real tokens (mask[s·capacity+i]
// for slot i of sequence s), kept here because the model decides them.
//
// A forward that is not continued later (training, scoring) needs the keys
// of one layer at a time: its cache is "scratch", one store all layers share.
type kvCache struct {
	b, capacity, len int
	store            tensor.KVCache
	mask             []int
	scratch          bool
}

func (m *Model) newCache(b, capacity int, scratch bool) *kvCache {
	layers := len(m.Layers)
	if scratch {
		layers = 1
	}
	return &kvCache{
		b: b, capacity: capacity, mask: make([]int, b*capacity), scratch: scratch,
		store: m.Backend.NewKVCache(b, m.NumKVHeads, capacity, m.HeadDim, layers),
	}
}

// rows returns a view of the cache for its first nb sequences.
func (c *kvCache) rows(nb int) *kvCache {
	v := *c
	v.b = nb
	v.mask = c.mask[:nb*c.capacity]
	return &v
}

// layer returns the store index that layer l keeps its keys in.
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
// needs, which is most of the saving in ZO training, and so does the last
// layer past its attention.
func (m *Model) Forward(in Input, opts Options) (out *Output, err error) {
	defer tensor.Recover(&err) // a device failure (out of memory, …) is an error
	if err := m.checkForward(in, opts); err != nil {
		return nil, err
	}
	nv := 0
	if m.Prompt != nil {
		if nv, err = m.promptLength(m.Prompt); err != nil {
			return nil, err
		}
		seq := withVirtualTokens(in, opts.Labels, nv)
		in, opts.Labels = seq.in, seq.labels
	}
	mask := in.Mask
	if mask == nil {
		mask = ones(in.B * in.T)
	}
	positions, err := m.positionsOf(in.Positions, mask, in.B, in.T)
	if err != nil {
		return nil, err
	}
	be := m.Backend
	cache := m.newCache(in.B, in.T, true)
	out = &Output{VirtualTokens: nv}
	var hidden *[][]float32
	if opts.HiddenStates {
		hidden = &out.HiddenStates
	}
	// With the loss alone asked for, the last layer's work past attention
	// runs only at the positions the loss reads (keep).
	var sup supervision
	var keep []int
	if opts.Labels != nil {
		if sup, err = m.supervised(opts.Labels, in.B, in.T); err != nil {
			return nil, err
		}
		if opts.Choices != nil {
			if err := m.checkChoices(opts.Choices, opts.ChoiceAt, sup, in.B); err != nil {
				return nil, err
			}
		}
		if !opts.Logits && !opts.HiddenStates {
			keep = sup.rows
		}
	}
	h := m.step(cache, in.Tokens, mask, positions, in.T, oneSpan(in.B, m.Adapter), hidden, keep)
	be.FreeKVCache(cache.store)
	defer be.Free(h)

	var logits tensor.Buf // nil unless asked for
	if opts.Logits {
		logits = be.Alloc(in.B * in.T * m.VocabSize)
		defer be.Free(logits)
		be.MatMul(logits, h, in.B*in.T, m.LMHead)
		out.Logits = be.ToHost(logits)
	}
	if opts.Labels != nil {
		ce := m.supervisedCE(h, logits, sup, keep != nil, opts.Choices, opts.ChoiceAt)
		n := len(sup.rows)
		out.setLoss(ce[:n], sup.seqOf, in.B)
		if opts.Choices != nil {
			out.ChoiceLoss = splitChoices(ce[n:], opts.Choices)
		}
	}
	return out, nil
}

// checkForward refuses what Forward cannot run before anything is
// computed: a malformed batch, options that do not fit it, an adapter of
// another shape.
func (m *Model) checkForward(in Input, opts Options) error {
	if err := m.checkInput(in); err != nil {
		return err
	}
	if opts.Labels != nil && len(opts.Labels) != in.B*in.T {
		return fmt.Errorf("labels has %d entries, want B·T = %d", len(opts.Labels), in.B*in.T)
	}
	if opts.Choices != nil && opts.Labels == nil {
		return fmt.Errorf("choices without labels: the labels mark where the choices are scored")
	}
	if opts.ChoiceAt != nil && opts.Choices == nil {
		return fmt.Errorf("choice_at without choices")
	}
	return m.checkAdapter(m.Adapter)
}

// positionsOf returns the positions of a batch of b sequences of t tokens
// with attention mask: those given, or the model's default: 0..t−1 on every
// row, pads counted (HF's for RoPE models), or OPT's from the mask,
// cumsum(mask)·mask − 1 (left padding shifts nothing; a pad reads position
// −1, row 1 of the table). An OPT position past its learned table is an
// error.
func (m *Model) positionsOf(given, mask []int, b, t int) ([]int, error) {
	positions := given
	if positions == nil {
		positions = make([]int, b*t)
		for s := range b {
			count := 0
			for i := range t {
				r := s*t + i
				positions[r] = i
				if m.IsOPT() {
					count += mask[r]
					positions[r] = count*mask[r] - 1
				}
			}
		}
	}
	if err := m.checkPositions(positions, t); err != nil {
		return nil, err
	}
	return positions, nil
}

// checkPositions refuses positions past an OPT model's learned positions
// (t: the row length, for the message).
func (m *Model) checkPositions(positions []int, t int) error {
	if !m.IsOPT() {
		return nil
	}
	for i, p := range positions {
		if p >= m.MaxPositions {
			return fmt.Errorf("position %d (sequence %d, token %d) is past the model's %d learned positions (max_position_embeddings): the sequence is too long",
				p, i/t, i%t, m.MaxPositions)
		}
	}
	return nil
}

// supervision is where a batch's causal-LM loss reads (HF's convention:
// the logits at position i are scored against labels[i+1]): the rows
// s·t+i of the supervised positions in sequence-then-position order, their
// targets, and the sequence each belongs to.
type supervision struct {
	rows, targets, seqOf []int
}

// supervised finds the supervised positions of b sequences of length t.
func (m *Model) supervised(labels []int, b, t int) (supervision, error) {
	var sup supervision
	for s := 0; s < b; s++ {
		for i := 0; i+1 < t; i++ {
			y := labels[s*t+i+1]
			if y == -100 {
				continue
			}
			if y < 0 || y >= m.VocabSize {
				return sup, fmt.Errorf("labels[%d][%d] = %d is outside the vocabulary [0, %d)", s, i+1, y, m.VocabSize)
			}
			sup.rows = append(sup.rows, s*t+i)
			sup.targets = append(sup.targets, y)
			sup.seqOf = append(sup.seqOf, s)
		}
	}
	return sup, nil
}

// headCrossEntropy runs the LM head on final hidden states h, blocks of
// len(targets) rows, block i as weights[i] perturbs the head (full-parameter
// training; nil: as it is), and returns each row's cross-entropy against its
// target, block by block. The blocks go through one product, so that the
// + and − variants of a direction read the head with one draw of its noise
// (the head is the model's largest matrix, and the rows few).
func (m *Model) headCrossEntropy(h tensor.Buf, targets []int, weights ...[]*tensor.Perturbation) []float64 {
	be, n := m.Backend, len(targets)
	if len(weights) == 0 {
		weights = [][]*tensor.Perturbation{nil}
	}
	all := make([]int, 0, len(weights)*n)
	for range weights {
		all = append(all, targets...)
	}
	logits := m.headLogits(h, n, weights)
	defer be.Free(logits)
	return be.CrossEntropy(logits, m.VocabSize, indices(len(all)), all)
}

// headLogits is the LM head's product with blocks of n rows of h, block i
// as weights[i] perturbs the head (nil: one block, the head as it is), in a
// buffer the caller frees.
func (m *Model) headLogits(h tensor.Buf, n int, weights [][]*tensor.Perturbation) tensor.Buf {
	if len(weights) == 0 {
		weights = [][]*tensor.Perturbation{nil}
	}
	spans, rows := make([]span, len(weights)), make([]int, len(weights))
	for i, w := range weights {
		spans[i], rows[i] = span{lo: i, hi: i + 1, weights: w}, n
	}
	logits := m.Backend.Alloc(len(weights) * n * m.VocabSize)
	m.matMul(logits, h, len(weights)*n, m.LMHead, m.headID(), spans, rows, false)
	return logits
}

// indices returns 0, 1, …, n−1.
func indices(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// setLoss sets HF's causal-LM loss from the cross-entropy of every
// supervised token (seqOf: its sequence, of b): the mean over all of them
// (token-weighted), accumulated in float64, and each sequence's mean.
func (out *Output) setLoss(ce []float64, seqOf []int, b int) {
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
}

// span is a run of consecutive sequences [lo, hi) that share one adapter
// and one perturbation of the model's own weights (full-parameter ZO).
type span struct {
	lo, hi  int
	adapter *Adapter
	weights []*tensor.Perturbation // by position in Tensors; nil: the weights as they are
}

// oneSpan applies a single adapter (possibly nil) to all b sequences.
func oneSpan(b int, a *Adapter) []span { return []span{{0, b, a, nil}} }

// perturbation is the span's perturbation of tensor id, or nil.
func (sp span) perturbation(id int) *tensor.Perturbation { return perturbationOf(sp.weights, id) }

// spanRows returns the number of token rows of each span: (hi−lo)·tn, or,
// with keep, the rows of keep (ordered span by span) that fall in it.
func spanRows(spans []span, tn int, keep []int) []int {
	rows := make([]int, len(spans))
	for i, sp := range spans {
		if keep == nil {
			rows[i] = (sp.hi - sp.lo) * tn
			continue
		}
		for _, r := range keep {
			if r >= sp.lo*tn && r < sp.hi*tn {
				rows[i]++
			}
		}
	}
	return rows
}

// segments returns, for each span, its rows (rows[i]·per) and its
// perturbation of tensor id, or nil when no span perturbs it.
func segments(spans []span, rows []int, per, id int) []tensor.Segment {
	var segs []tensor.Segment
	perturbed := false
	for i, sp := range spans {
		p := sp.perturbation(id)
		perturbed = perturbed || p != nil
		segs = append(segs, tensor.Segment{Rows: rows[i] * per, P: p})
	}
	if !perturbed {
		return nil
	}
	return segs
}

// matMul computes y = x·Wᵀ (add: y += x·Wᵀ) for the n rows of x, each
// span's rows reading W, tensor id, as the span perturbs it.
func (m *Model) matMul(y, x tensor.Buf, n int, w tensor.Weight, id int, spans []span, rows []int, add bool) {
	be := m.Backend
	if segs := segments(spans, rows, 1, id); segs != nil {
		be.(tensor.Trainer).MatMulPerturbed(y, x, w, segs, add)
		return
	}
	if add {
		be.MatMulAdd(y, x, n, w)
	} else {
		be.MatMul(y, x, n, w)
	}
}

// norm is the model's norm of the rows of x (width n; per rows for each
// token row: the heads of a per-head norm): RMSNorm with weight, or, with a
// bias (OPT), LayerNorm with weight and bias; each span's rows with the
// vectors, tensors wID and bID, as the span perturbs them.
func (m *Model) norm(dst, x, weight, bias tensor.Buf, n, wID, bID int, spans []span, rows []int, per int) {
	be := m.Backend
	m.bySegment(spans, rows, per, []tensor.Buf{weight, bias}, []int{wID, bID}, func(lo, r int, v []tensor.Buf) {
		d, xs := dst.Slice(lo*n, (lo+r)*n), x.Slice(lo*n, (lo+r)*n)
		if bias == nil {
			be.RMSNorm(d, xs, v[0], r, n, m.RMSNormEps)
		} else {
			be.LayerNorm(d, xs, v[0], v[1], r, n, m.LayerNormEps)
		}
	})
}

// rmsNorm is norm without a bias: RMSNorm.
func (m *Model) rmsNorm(dst, x, weight tensor.Buf, n, id int, spans []span, rows []int, per int) {
	m.norm(dst, x, weight, nil, n, id, -1, spans, rows, per)
}

// bySegment calls fn(lo, r, vs) for runs of token rows [lo, lo+r) (of
// rows·per in all) that read the vectors vecs (tensors ids; a nil vector
// stays nil) as one span perturbs them: once for all rows with vecs as
// they are when no span perturbs any of them, else once per span, with
// perturbed copies where that span perturbs.
func (m *Model) bySegment(spans []span, rows []int, per int, vecs []tensor.Buf, ids []int, fn func(lo, r int, vs []tensor.Buf)) {
	var segs [][]tensor.Segment
	for _, id := range ids {
		if s := segments(spans, rows, per, id); s != nil {
			segs = append(segs, s)
		}
	}
	if len(segs) == 0 {
		total := 0
		for _, r := range rows {
			total += r * per
		}
		fn(0, total, vecs)
		return
	}
	be, lo := m.Backend, 0
	for i, sp := range spans {
		vs := make([]tensor.Buf, len(vecs))
		var made []tensor.Buf
		for j, v := range vecs {
			vs[j] = v
			if p := sp.perturbation(ids[j]); p != nil && v != nil {
				vs[j] = be.Alloc(v.Len())
				be.(tensor.Trainer).Perturb(vs[j], v, p)
				made = append(made, vs[j])
			}
		}
		fn(lo, rows[i]*per, vs)
		if len(made) > 0 {
			be.Free(made...)
		}
		lo += rows[i] * per
	}
}

// addBias adds a projection's bias (tensor id; nil: none) to each of the
// rows of y [*][n], each span's rows with the bias as the span perturbs it.
func (m *Model) addBias(y, bias tensor.Buf, n, id int, spans []span, rows []int) {
	if bias == nil {
		return
	}
	m.bySegment(spans, rows, 1, []tensor.Buf{bias}, []int{id}, func(lo, r int, v []tensor.Buf) {
		m.Backend.AddBias(y.Slice(lo*n, (lo+r)*n), v[0], r, n)
	})
}

// llamaEmbed writes the embeddings of b sequences of tn tokens into x
// [b·tn][hidden], read as weights perturbs the embeddings (full-parameter
// training; nil: as they are). If prompt is not nil (prompt tuning), the
// first rows of every sequence are its virtual tokens and get the prompt's
// embeddings. RoPE models take their positions in the layers.
func (m *Model) llamaEmbed(x tensor.Buf, tokens, _ []int, b, tn int, prompt []float32, weights []*tensor.Perturbation) {
	m.tokenRows(x, tokens, b, tn, prompt, perturbationOf(weights, m.embedID()))
}

// tokenRows writes the rows of the token embeddings, as pt perturbs them,
// into x [b·tn][embedDim], and the prompt's virtual tokens over the first
// rows of every sequence.
func (m *Model) tokenRows(x tensor.Buf, tokens []int, b, tn int, prompt []float32, pt *tensor.Perturbation) {
	be := m.Backend
	if pt != nil {
		be.(tensor.Trainer).RowsPerturbed(x, m.Embed, tokens, pt)
	} else {
		be.Rows(x, m.Embed, tokens)
	}
	if prompt == nil {
		return
	}
	p := be.FromHost(prompt)
	for s := range b {
		lo := s * tn * m.embedDim()
		be.Copy(x.Slice(lo, lo+p.Len()), p)
	}
	be.Free(p)
}

// perturbationOf is weights' perturbation of tensor id, or nil.
func perturbationOf(weights []*tensor.Perturbation, id int) *tensor.Perturbation {
	if weights == nil || id < 0 {
		return nil
	}
	return weights[id]
}

// EmbeddingRow copies the input embedding of token id into dst [embedDim]
// (prompt tuning initialises virtual tokens from them).
func (m *Model) EmbeddingRow(dst []float32, id int) {
	row := m.Backend.Alloc(m.embedDim())
	m.Backend.Rows(row, m.Embed, []int{id})
	copy(dst, m.Backend.ToHost(row))
	m.Backend.Free(row)
}

// step runs tn new tokens per row (tokens, mask and positions are [B·tn])
// through every layer, appending their keys and values to the cache, and
// returns the final hidden states [B·tn][embedDim] (after the final norm,
// and OPT's project_out), which the caller frees. If hidden is not nil,
// HF's output_hidden_states are appended to it.
// If keep is not nil (and hidden is nil), only the rows keep of the result
// are needed: the last layer finishes only those (layerForward) and step
// returns them alone, [len(keep)][embedDim] in keep's order.
//
// On the first step, if m.Prompt is set, the first rows of each sequence are
// its virtual tokens (see withVirtualTokens) and get the prompt embeddings.
func (m *Model) step(c *kvCache, tokens, mask, positions []int, tn int, spans []span, hidden *[][]float32, keep []int) tensor.Buf {
	be := m.Backend
	n, d := c.b*tn, m.HiddenSize
	for b := 0; b < c.b; b++ {
		copy(c.mask[b*c.capacity+c.len:], mask[b*tn:(b+1)*tn])
	}
	x := be.Alloc(n * d)
	var prompt []float32
	if c.len == 0 {
		prompt = m.Prompt
	}
	m.fam.embed(m, x, tokens, positions, c.b, tn, prompt, nil)
	rope := m.newRope(positions, c.len, tn)
	ws := m.newWorkspace(n)
	p := &pass{c: c, rope: rope, tn: tn, spans: spans, ws: ws}
	for l := range m.Layers {
		m.keepHidden(hidden, x)
		if l == len(m.Layers)-1 && keep != nil && hidden == nil {
			xk := m.layerForward(l, x, p, keep)
			be.Free(x)
			x, n = xk, len(keep)
			continue
		}
		m.layerForward(l, x, p, nil)
	}
	rope.free(be)
	ws.free(be)
	c.len += tn
	if y, made := m.final(x, n, nil); made {
		be.Free(x)
		x = y
	}
	m.keepHidden(hidden, x)
	return x
}

// final applies what follows the last layer to the n rows of x, read as
// weights perturbs the model's tensors (nil: as they are): the final norm
// in place, then, where the embeddings are narrower, OPT's project_out
// into a new buffer (made). It returns the result, of embedDim columns: the
// LM head's input.
func (m *Model) final(x tensor.Buf, n int, weights []*tensor.Perturbation) (y tensor.Buf, made bool) {
	sp, rows := []span{{0, 1, nil, weights}}, []int{n}
	if !m.NoFinalNorm {
		m.norm(x, x, m.Norm, m.NormBias, m.HiddenSize, m.normID(), m.normBiasID(), sp, rows, 1)
	}
	if m.ProjectOut == nil {
		return x, false
	}
	y = m.Backend.Alloc(n * m.embedDim())
	m.matMul(y, x, n, m.ProjectOut, m.projectOutID(), sp, rows, false)
	return y, true
}

// keepHidden appends a host copy of x to hidden, if hidden is not nil.
func (m *Model) keepHidden(hidden *[][]float32, x tensor.Buf) {
	if hidden != nil {
		*hidden = append(*hidden, slices.Clone(m.Backend.ToHost(x)))
	}
}

func ones(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = 1
	}
	return o
}
