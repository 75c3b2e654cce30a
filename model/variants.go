package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// Variant is one version of the trainable part of the model, evaluated side
// by side with others in one batched forward (the perturbed points of a ZO
// step). Everything frozen is shared; only the adapter, the virtual tokens
// or the perturbation of the model's own weights differ.
type Variant struct {
	Adapter *Adapter  // LoRA weights of this variant; nil for none
	Prompt  []float32 // prompt tuning: [n][hidden] virtual-token embeddings put before every sequence; nil for none
	// Weights, for full-parameter training, perturbs the model's own
	// tensors: Weights[i] is how this variant reads tensor i of Tensors
	// (nil: as it is), never written. nil perturbs nothing. The backend
	// must be a tensor.Trainer.
	Weights []*tensor.Perturbation
	// From is the first decoder layer where this variant differs from the base
	// (grouped estimation perturbs one layer's adapter). Layers before it are
	// not run again: the variant starts from the base pass's hidden state
	// entering layer From (prefix caching). 0 runs the whole model;
	// NumLayers means "identical to the base" (its loss is the base's).
	From int
}

// VariantStats describes the work a Losses call did.
type VariantStats struct {
	// LayerEvals counts decoder-layer evaluations over one batch of B
	// sequences: the base pass's layers plus every variant's layers. Without
	// prefix caching it would be NumLayers per variant.
	LayerEvals int
}

// Losses returns the loss of the same batch under each variant, computed in
// one batched forward: the frozen matrices run once over the rows of every
// variant in flight, and each variant's adapter adds its own low-rank terms.
// base is the unperturbed trainable state; variants with From > 0 must equal
// it before layer From and must carry the same Prompt.
//
// A variant's loss is computed exactly as Forward would compute it alone:
// every row is processed by the same kernels in the same order wherever it
// sits in the batch, so the results do not depend on which other variants
// share the pass.
//
// Variants that join the base pass at several layers (grouped estimation
// with prefix caching) do not all run at once: that held every group's
// activations together, 3.7 times a forward's peak memory on Qwen3-0.6B's
// 28 groups at 16×64. The base pass runs first, alone, keeping its hidden
// state where variants join; then the variants of one layer (one group's)
// run at a time from there, in the memory of a plain step's.
func (m *Model) Losses(in Input, labels []int, base Variant, variants []Variant) (losses []float64, stats VariantStats, err error) {
	defer tensor.Recover(&err) // a device failure (out of memory, …) is an error
	// Check the batch and the variants; learn the virtual tokens they share.
	nv, maxFrom, err := m.checkVariants(in, labels, base, variants)
	if err != nil {
		return nil, stats, err
	}
	// Put the virtual-token slots before every sequence (none without prompt tuning).
	seq := withVirtualTokens(in, labels, nv)
	// Find the positions the losses read: the last layer finishes only those.
	sup, err := m.supervised(seq.labels, seq.in.B, seq.in.T)
	if err != nil {
		return nil, stats, err
	}
	if len(sup.rows) == 0 {
		return nil, stats, fmt.Errorf("the batch has no supervised token")
	}
	positions, err := m.positionsOf(seq.in.Positions, seq.in.Mask, seq.in.B, seq.in.T)
	if err != nil {
		return nil, stats, err
	}
	return m.lossesByGroup(seq, sup, positions, base, variants, maxFrom)
}

// lossesByGroup runs Losses's passes: where variants join the base pass at
// layers up to maxFrom > 0, the base pass alone through the layers before
// maxFrom, its hidden state kept where variants join (baseStates); then
// the variants that join at each layer together (a group's 2q; every
// variant, at layer 0, when none joins later), from that state to the end.
// Every row runs the layers it would in one pass, through the same
// kernels, so the losses are the same.
func (m *Model) lossesByGroup(seq sequences, sup supervision, positions []int, base Variant, variants []Variant, maxFrom int) ([]float64, VariantStats, error) {
	states := map[int]tensor.Buf{} // freed however this returns: a device failure panics (Losses recovers it)
	defer func() {
		for _, s := range states {
			m.Backend.Free(s)
		}
	}()
	var stats VariantStats
	if maxFrom > 0 {
		stats.LayerEvals = m.baseStates(seq, sup, positions, base, variants, maxFrom, states)
	}
	losses := make([]float64, len(variants))
	for from := 0; from <= m.NumLayers; from++ {
		var group []int
		for i, v := range variants {
			if v.From == from {
				group = append(group, i)
			}
		}
		if len(group) > 0 {
			stats.LayerEvals += m.groupLosses(seq, sup, positions, variants, group, states[from], losses)
		}
	}
	return losses, stats, nil
}

// groupLosses runs the variants of group (indices into variants, all
// joining at one layer) from hidden state from (nil at layer 0: they are
// embedded) to the end, writes their losses into losses and returns the
// layer evaluations it made.
func (m *Model) groupLosses(seq sequences, sup supervision, positions []int, variants []Variant, group []int, from tensor.Buf, losses []float64) int {
	p := m.newVariantPass(seq, sup, positions, len(group))
	defer p.free()
	for _, i := range group {
		p.add(i, variants[i], from)
	}
	evals := 0
	for l := variants[group[0]].From; l < m.NumLayers; l++ {
		evals += p.layer(l)
	}
	p.final()
	got := p.losses(len(variants))
	for _, i := range group {
		losses[i] = got[i]
	}
	return evals
}

// baseStates runs the base pass alone through layers [0, maxFrom), puts
// into states a copy of its hidden state entering each layer l > 0 a
// variant joins at (at l = NumLayers, after the last layer: its finished
// rows), and returns the layer evaluations it made. They are B·T·hidden
// values each: 117 MB for Qwen3-0.6B's 28 layers at 16×64.
func (m *Model) baseStates(seq sequences, sup supervision, positions []int, base Variant, variants []Variant, maxFrom int, states map[int]tensor.Buf) int {
	joins := map[int]bool{}
	for _, v := range variants {
		joins[v.From] = v.From > 0
	}
	p := m.newVariantPass(seq, sup, positions, 1)
	defer p.free()
	p.add(-1, base, nil)
	evals := 0
	for l := 0; ; l++ {
		if joins[l] {
			x := p.slots(0, 1)
			states[l] = m.Backend.Alloc(x.Len())
			m.Backend.Copy(states[l], x)
		}
		if l == maxFrom {
			return evals
		}
		evals += p.layer(l)
	}
}

// checkVariants validates the batch, its labels and the variants before any
// work is done, and returns the number of virtual tokens nv (every variant
// must carry as many as the base: they share one sequence layout) and the
// last layer maxFrom at which a variant joins the base pass (0: no variant
// needs the base pass).
func (m *Model) checkVariants(in Input, labels []int, base Variant, variants []Variant) (nv, maxFrom int, err error) {
	if err := m.checkInput(in); err != nil {
		return 0, 0, err
	}
	if len(labels) != in.B*in.T {
		return 0, 0, fmt.Errorf("labels has %d entries, want B·T = %d", len(labels), in.B*in.T)
	}
	nv, err = m.promptLength(base.Prompt)
	if err != nil {
		return 0, 0, fmt.Errorf("base: %w", err)
	}
	for i, v := range append([]Variant{base}, variants...) {
		err := m.checkWeights(v.Weights)
		if err == nil {
			err = m.checkAdapter(v.Adapter)
		}
		if err != nil {
			if i == 0 {
				return 0, 0, fmt.Errorf("base: %w", err)
			}
			return 0, 0, fmt.Errorf("variant %d: %w", i-1, err)
		}
	}
	for i, v := range variants {
		if v.From < 0 || v.From > m.NumLayers {
			return 0, 0, fmt.Errorf("variant %d: From = %d outside [0, %d]", i, v.From, m.NumLayers)
		}
		n, err := m.promptLength(v.Prompt)
		if err != nil {
			return 0, 0, fmt.Errorf("variant %d: %w", i, err)
		}
		if n != nv {
			return 0, 0, fmt.Errorf("variant %d has %d virtual tokens, the base %d", i, n, nv)
		}
		maxFrom = max(maxFrom, v.From)
	}
	return nv, maxFrom, nil
}

// checkWeights refuses a perturbation of the model's own weights that the
// model cannot apply.
func (m *Model) checkWeights(w []*tensor.Perturbation) error {
	if w == nil {
		return nil
	}
	if _, ok := m.Backend.(tensor.Trainer); !ok {
		return fmt.Errorf("the %s backend cannot perturb the model's own weights (no tensor.Trainer)", m.Backend.Name())
	}
	ts, err := m.Tensors()
	if err != nil {
		return err
	}
	if len(w) != len(ts) {
		return fmt.Errorf("perturbations of %d tensors, the model has %d", len(w), len(ts))
	}
	return nil
}

// variantPass is one batched forward over variants: its members (or the
// base pass alone, baseStates). Their hidden states sit side by side in
// buf, member k in slot k, so that one layer call runs them all.
type variantPass struct {
	m         *Model
	seq       sequences   // the batch with its virtual-token slots
	sup       supervision // the positions the losses read
	b, t      int         // sequences per member, tokens per sequence
	buf       tensor.Buf  // one slot of b·t·hidden values per member
	members   []member
	rope      *rope
	positions []int        // every sequence's positions (OPT's learned positions read them at the embedding)
	cache     *kvCache     // sized for every member; each layer uses a view of its first rows
	ws        *workspace   // likewise
	outs      []tensor.Buf // each member's final hidden states (final), when final made them
}

// member is one forward in flight in a variantPass.
type member struct {
	variant int // index into the variants, or -1 for the base pass
	v       Variant
}

// newVariantPass allocates the hidden states of slots members, and one
// rope table, attention cache and workspace, sized for all of them, that
// serve every layer: however many members a layer runs, it uses a view of
// their first rows. A full-parameter step evaluates its 2q variants in the
// memory of a forward over their rows alone.
func (m *Model) newVariantPass(seq sequences, sup supervision, positions []int, slots int) *variantPass {
	b, t := seq.in.B, seq.in.T
	p := &variantPass{m: m, seq: seq, sup: sup, b: b, t: t, positions: positions}
	p.buf = m.Backend.Alloc(slots * b * t * m.HiddenSize)
	p.rope = m.newRope(positions, 0, t)
	maxSeqs := slots * b
	p.cache = m.newCache(maxSeqs, t, true)
	for k := 0; k < slots; k++ {
		copy(p.cache.mask[k*b*t:], seq.in.Mask)
	}
	p.ws = m.newWorkspace(maxSeqs * t)
	return p
}

// free releases what newVariantPass allocated.
func (p *variantPass) free() {
	be := p.m.Backend
	p.ws.free(be)
	be.FreeKVCache(p.cache.store)
	p.rope.free(be)
	be.Free(p.buf)
	for _, o := range p.outs {
		if o != nil {
			be.Free(o)
		}
	}
}

// slots returns the hidden states of members [lo, hi).
func (p *variantPass) slots(lo, hi int) tensor.Buf {
	rows := p.b * p.t * p.m.HiddenSize
	return p.buf.Slice(lo*rows, hi*rows)
}

// add makes variant i (-1: the base pass) a member: its hidden state is a
// copy of from, or, when from is nil, the embedding of the batch (with v's
// virtual tokens).
func (p *variantPass) add(i int, v Variant, from tensor.Buf) {
	p.members = append(p.members, member{i, v})
	x := p.slots(len(p.members)-1, len(p.members))
	if from != nil {
		p.m.Backend.Copy(x, from)
		return
	}
	p.m.fam.embed(p.m, x, p.seq.in.Tokens, p.positions, p.b, p.t, v.Prompt, v.Weights)
}

// layer runs decoder layer l over every member in one call, each member's
// rows with its own adapter, and returns the number of members it ran. The
// last layer finishes only the positions the losses read (layerForward's
// keep): each member's slot then holds those rows first, in p.sup's order.
func (p *variantPass) layer(l int) int {
	spans := make([]span, len(p.members))
	for k, mb := range p.members {
		spans[k] = span{k * p.b, (k + 1) * p.b, mb.v.Adapter, mb.v.Weights}
	}
	n := len(p.members) * p.b
	x := p.slots(0, len(p.members))
	fwd := &pass{c: p.cache.rows(n), rope: p.rope, tn: p.t, spans: spans, ws: p.ws.rows(p.m, n*p.t)}
	if l < p.m.NumLayers-1 {
		p.m.layerForward(l, x, fwd, nil)
		return len(p.members)
	}
	rows := p.sup.rows
	keep := make([]int, 0, len(p.members)*len(rows))
	for k := range p.members {
		for _, r := range rows {
			keep = append(keep, k*p.b*p.t+r)
		}
	}
	xk := p.m.layerForward(l, x, fwd, keep)
	w := len(rows) * p.m.HiddenSize
	for k := range p.members {
		p.m.Backend.Copy(p.slots(k, k+1).Slice(0, w), xk.Slice(k*w, (k+1)*w))
	}
	p.m.Backend.Free(xk)
	return len(p.members)
}

// finished returns the last layer's output of member k: the first rows of
// its slot, one per supervised position (see layer), or, after final, the
// LM head's input.
func (p *variantPass) finished(k int) tensor.Buf {
	if p.outs != nil && p.outs[k] != nil {
		return p.outs[k]
	}
	return p.slots(k, k+1).Slice(0, len(p.sup.rows)*p.m.HiddenSize)
}

// final applies what follows the last layer (the final norm; OPT's
// project_out), as each member's variant reads it, to every member's final
// hidden states.
func (p *variantPass) final() {
	p.outs = make([]tensor.Buf, len(p.members))
	for k, mb := range p.members {
		if y, made := p.m.final(p.finished(k), len(p.sup.rows), mb.v.Weights); made {
			p.outs[k] = y
		}
	}
}

// losses returns each variant's loss: the mean cross-entropy over every
// supervised token of the batch (token-weighted, as Forward's), summed in
// float64. The base pass, if still a member, has no loss of its own. The
// variants' final hidden states go through the LM head together.
func (p *variantPass) losses(nVariants int) []float64 {
	losses := make([]float64, nVariants)
	var ks []int
	var weights [][]*tensor.Perturbation
	for k, mb := range p.members {
		if mb.variant >= 0 {
			ks, weights = append(ks, k), append(weights, mb.v.Weights)
		}
	}
	if len(ks) == 0 {
		return losses
	}
	be, n := p.m.Backend, len(p.sup.rows)
	w := p.finished(ks[0]).Len()
	h := be.Alloc(len(ks) * w)
	defer be.Free(h)
	for i, k := range ks {
		be.Copy(h.Slice(i*w, (i+1)*w), p.finished(k))
	}
	ce := p.m.headCrossEntropy(h, p.sup.targets, weights...)
	for i, k := range ks {
		var sum float64
		for _, c := range ce[i*n : (i+1)*n] {
			sum += c
		}
		losses[p.members[k].variant] = sum / float64(n)
	}
	return losses
}

// PromptTunable says why prompt tuning cannot run on m, or nil: its virtual
// tokens are hidden_size wide (PEFT's token_dim) and stand in for
// embeddings, so the embeddings must be as wide (OPT-350m's are narrower,
// projected up: PEFT fails on it too).
func (m *Model) PromptTunable() error {
	if m.embedDim() != m.HiddenSize {
		return fmt.Errorf("prompt tuning needs embeddings as wide as the hidden size (word_embed_proj_dim %d, hidden_size %d: PEFT's prompts have hidden_size values)",
			m.embedDim(), m.HiddenSize)
	}
	return nil
}

// promptLength returns the number of virtual tokens in a prompt-tuning
// embedding [n][hidden].
func (m *Model) promptLength(p []float32) (int, error) {
	if len(p) > 0 {
		if err := m.PromptTunable(); err != nil {
			return 0, err
		}
	}
	if len(p)%m.HiddenSize != 0 {
		return 0, fmt.Errorf("prompt embeddings of %d values are not a whole number of %d-wide rows", len(p), m.HiddenSize)
	}
	return len(p) / m.HiddenSize, nil
}

// sequences is a batch with its labels, after virtual tokens were added.
type sequences struct {
	in     Input
	labels []int
}

// withVirtualTokens puts nv virtual-token slots before every sequence, as
// PEFT prompt tuning does: before everything (BOS and padding included), with
// attention mask 1 and label -100. Their token ids are placeholders (0): the
// caller overwrites their embeddings. PEFT drops position_ids, so the
// positions are the model's default (positionsOf: 0..nv+T-1 for RoPE
// models, OPT's from the mask): nil. With nv = 0 the batch is returned
// unchanged.
func withVirtualTokens(in Input, labels []int, nv int) sequences {
	if labels == nil {
		labels = make([]int, in.B*in.T)
		for i := range labels {
			labels[i] = -100
		}
	}
	t := nv + in.T
	out := sequences{in: Input{B: in.B, T: t}}
	out.in.Tokens = make([]int, in.B*t)
	out.in.Mask = make([]int, in.B*t)
	if nv == 0 && in.Positions != nil {
		out.in.Positions = make([]int, in.B*t)
	}
	out.labels = make([]int, in.B*t)
	for s := 0; s < in.B; s++ {
		for i := 0; i < t; i++ {
			r := s*t + i
			if i < nv {
				out.in.Mask[r], out.labels[r] = 1, -100
				continue
			}
			src := s*in.T + i - nv
			out.in.Tokens[r], out.labels[r], out.in.Mask[r] = in.Tokens[src], labels[src], 1
			if in.Mask != nil {
				out.in.Mask[r] = in.Mask[src]
			}
			if out.in.Positions != nil {
				out.in.Positions[r] = in.Positions[src]
			}
		}
	}
	return out
}
