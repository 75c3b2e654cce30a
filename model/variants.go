package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// Variant is one version of the trainable part of the model, evaluated side
// by side with others in one batched forward (the perturbed points of a ZO
// step). Everything frozen is shared; only the adapter or the virtual tokens
// differ.
type Variant struct {
	Adapter *Adapter  // LoRA weights of this variant; nil for none
	Prompt  []float32 // prompt tuning: [n][hidden] virtual-token embeddings put before every sequence; nil for none
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
func (m *Model) Losses(in Input, labels []int, base Variant, variants []Variant) (losses []float64, stats VariantStats, err error) {
	defer tensor.Recover(&err) // a device failure (out of memory, …) is an error
	if err := m.checkInput(in); err != nil {
		return nil, stats, err
	}
	if len(labels) != in.B*in.T {
		return nil, stats, fmt.Errorf("labels has %d entries, want B·T = %d", len(labels), in.B*in.T)
	}
	nv, err := m.promptLength(base.Prompt)
	if err != nil {
		return nil, stats, fmt.Errorf("base: %w", err)
	}
	maxFrom := 0
	for i, v := range variants {
		if v.From < 0 || v.From > m.NumLayers {
			return nil, stats, fmt.Errorf("variant %d: From = %d outside [0, %d]", i, v.From, m.NumLayers)
		}
		n, err := m.promptLength(v.Prompt)
		if err != nil {
			return nil, stats, fmt.Errorf("variant %d: %w", i, err)
		}
		if n != nv {
			return nil, stats, fmt.Errorf("variant %d has %d virtual tokens, the base %d", i, n, nv)
		}
		maxFrom = max(maxFrom, v.From)
	}
	seq := withVirtualTokens(in, labels, nv)
	b, t, d := in.B, seq.in.T, m.HiddenSize
	rowsPerMember := b * t

	// Members are the variants in flight; the base ("clean") pass comes first
	// while a later variant still needs its hidden states. Their hidden states
	// sit side by side in buf, member k in slot first+k; dropping the base
	// pass moves the window one slot on (first++).
	type member struct {
		variant int // index into variants, or -1 for the base pass
		v       Variant
	}
	be := m.Backend
	var members []member
	buf := be.Alloc((len(variants) + 1) * rowsPerMember * d)
	defer be.Free(buf)
	first := 0 // slot of members[0]
	slot := func(k int) tensor.Buf {
		return buf.Slice((first+k)*rowsPerMember*d, (first+k+1)*rowsPerMember*d)
	}
	addMember := func(i int, v Variant, from tensor.Buf) {
		members = append(members, member{i, v})
		x := slot(len(members) - 1)
		if from != nil {
			be.Copy(x, from)
			return
		}
		m.embed(x, seq.in.Tokens, b, t, v.Prompt)
	}
	if maxFrom > 0 {
		addMember(-1, base, nil)
	}
	for i, v := range variants {
		if v.From == 0 {
			addMember(i, v, nil)
		}
	}
	rope := m.newRope(seq.in.Positions)
	defer rope.free(be)
	// One cache and one workspace, sized for every variant plus the base
	// pass, serve all layers: each layer uses a view of its first rows.
	maxSeqs := (len(variants) + 1) * b
	cache := m.newCache(maxSeqs, t, true)
	defer be.FreeKVCache(cache.store)
	for k := 0; k < len(variants)+1; k++ {
		copy(cache.mask[k*b*t:], seq.in.Mask)
	}
	ws := m.newWorkspace(maxSeqs * t)
	defer ws.free(be)
	for l := 0; l < m.NumLayers; l++ {
		if l > 0 {
			for i, v := range variants {
				if v.From == l {
					addMember(i, v, slot(0)) // the base pass is member 0
				}
			}
		}
		if len(members) > 0 && members[0].variant == -1 && maxFrom <= l {
			// No variant joins after this layer: drop the base pass.
			members = members[1:]
			first++
		}
		if len(members) == 0 {
			break
		}
		spans := make([]span, len(members))
		for k, mb := range members {
			spans[k] = span{k * b, (k + 1) * b, mb.v.Adapter}
		}
		n := len(members) * b
		x := buf.Slice(first*rowsPerMember*d, (first+len(members))*rowsPerMember*d)
		m.layerForward(l, x, cache.rows(n), rope, t, spans, ws.rows(m, n*t))
		stats.LayerEvals += len(members)
	}
	// Variants identical to the base take its final hidden state.
	for i, v := range variants {
		if v.From == m.NumLayers {
			addMember(i, v, slot(0))
		}
	}

	losses = make([]float64, len(variants))
	x := buf.Slice(first*rowsPerMember*d, (first+len(members))*rowsPerMember*d)
	be.RMSNorm(x, x, m.Norm, len(members)*rowsPerMember, d, m.RMSNormEps)
	for k, mb := range members {
		if mb.variant < 0 {
			continue
		}
		ce, _, err := m.tokenCE(slot(k), nil, b, t, seq.labels)
		if err != nil {
			return nil, stats, err
		}
		if len(ce) == 0 {
			return nil, stats, fmt.Errorf("the batch has no supervised token")
		}
		var sum float64
		for _, c := range ce {
			sum += c
		}
		losses[mb.variant] = sum / float64(len(ce))
	}
	return losses, stats, nil
}

// promptLength returns the number of virtual tokens in a prompt-tuning
// embedding [n][hidden].
func (m *Model) promptLength(p []float32) (int, error) {
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
// caller overwrites their embeddings. PEFT drops position_ids, so positions
// are HF's default 0..nv+T-1. With nv = 0 the batch is returned unchanged
// (positions filled in).
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
	out.in.Positions = make([]int, in.B*t)
	out.labels = make([]int, in.B*t)
	for s := 0; s < in.B; s++ {
		for i := 0; i < t; i++ {
			r := s*t + i
			out.in.Positions[r] = i
			if i < nv {
				out.in.Mask[r], out.labels[r] = 1, -100
				continue
			}
			src := s*in.T + i - nv
			out.in.Tokens[r], out.labels[r], out.in.Mask[r] = in.Tokens[src], labels[src], 1
			if in.Mask != nil {
				out.in.Mask[r] = in.Mask[src]
			}
			if nv == 0 && in.Positions != nil {
				out.in.Positions[r] = in.Positions[src]
			}
		}
	}
	return out
}
