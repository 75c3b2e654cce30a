// Package fullparam trains a model's own weights with the ZO engine:
// full-parameter ZO, MeZO's main mode. It lays the model's parameter
// tensors out as the engine's parameter groups (a zo.Store), turns each
// variant of a step into the perturbations the model reads its weights
// with, and applies each update where the weights are, through the
// backend's tensor.Trainer operations. Nothing the size of the model is
// copied or stored: not θ (the weights are θ), not z (drawn again from the
// seed wherever it is needed), not a perturbed copy (formed as a weight is
// read). The optimizers' moments (ZO-Adam's two, R-AdaZO's, ZO-SGD's
// momentum) are the only addition, next to the weights on the same device.
package fullparam

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/suggest"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/zo"
)

// Options choose which tensors train and how they are grouped.
type Options struct {
	// Include lists glob patterns (path.Match) of HF tensor names that
	// train; empty: every tensor. Exclude lists those that do not, even if
	// included (e.g. "model.embed_tokens.weight": MeZO's and FZOO's
	// fine-tuning without the embeddings; with tied embeddings that also
	// freezes the LM head, the same matrix).
	Include, Exclude []string
	// Grouped gives each layer its own parameter group, in the order of
	// model.Tensors (Llama's and Qwen3's: the embeddings, each decoder
	// layer, then the final norm with an untied LM head; OPT lists its
	// final norm before its layers), for grouped (block-coordinate)
	// estimation; otherwise every trained tensor is in one group.
	Grouped bool
}

// Params is a model's trainable weights as the ZO engine's parameters.
type Params struct {
	m       *model.Model
	be      tensor.Trainer
	tensors []model.Tensor // every tensor of the model, Tensors' order
	groups  []group
	state   []moments // by tensor index: the optimizer's per-coordinate state
}

// group is one parameter group: tensors (indices into Params.tensors) in
// order, each starting at its offset in the group's flat vector.
type group struct {
	tensors []int
	offsets []int64
	size    int64
	// layer is the first decoder layer any of the group's tensors acts at
	// (prefix caching): the embeddings' at 0 (a tied head too: it is the
	// embeddings), the final norm's and an untied head's after the last.
	layer int
	// at is its tensors' model.Tensor.Layer when grouped: −1 the
	// embeddings, a decoder layer, NumLayers the final norm and an untied
	// head (GroupAt).
	at int
}

// moments is the optimizer state of one tensor, in the weight's layout.
type moments struct {
	m, v   tensor.Weight // a matrix's
	mv, vv tensor.Buf    // a vector's
}

// New lays out m's tensors as parameter groups. m's backend must implement
// tensor.Trainer and m must not be stacked (model.LoadOptions.Unstacked).
func New(m *model.Model, opts Options) (*Params, error) {
	be, ok := m.Backend.(tensor.Trainer)
	if !ok {
		return nil, fmt.Errorf("full-parameter training: the %s backend cannot train the model's own weights", m.Backend.Name())
	}
	ts, err := m.Tensors()
	if err != nil {
		return nil, fmt.Errorf("full-parameter training: %w", err)
	}
	if err := checkPatterns(ts, opts); err != nil {
		return nil, fmt.Errorf("full-parameter training: %w", err)
	}
	p := &Params{m: m, be: be, tensors: ts, state: make([]moments, len(ts))}
	groupOf := map[int]int{} // a tensor's layer → its group, when grouped
	for i, t := range ts {
		if !trains(t.Name, opts) {
			continue
		}
		// One group, or when grouped one per layer: the embeddings' (−1),
		// the decoder layers', the head's, in the order their first tensor
		// comes (OPT-350m lists project_out, the head's, between the
		// embeddings and project_in, which joins the embeddings' group).
		key := 0
		if opts.Grouped {
			key = t.Layer
		}
		gi, ok := groupOf[key]
		if !ok {
			gi, groupOf[key] = len(p.groups), len(p.groups)
			p.groups = append(p.groups, group{layer: max(t.Layer, 0), at: t.Layer})
		}
		g := &p.groups[gi]
		// Where the group's variants start is its earliest tensor's layer,
		// not its first's: OPT lists its final norm before its layers.
		g.layer = min(g.layer, max(t.Layer, 0))
		g.tensors = append(g.tensors, i)
		g.offsets = append(g.offsets, g.size)
		g.size += int64(t.Size())
	}
	if len(p.groups) == 0 {
		return nil, fmt.Errorf("full-parameter training: no tensor of the model is included (include %q, exclude %q; the model's tensors: %s)",
			opts.Include, opts.Exclude, someNames(ts))
	}
	return p, nil
}

// PatternError is an include or exclude pattern that is malformed or
// matches none of the model's tensors: a pattern written for another
// architecture's names (Llama's model.embed_tokens.weight on OPT, whose
// embeddings are model.decoder.embed_tokens.weight) would otherwise
// freeze or train nothing it names, without a word.
type PatternError struct {
	List    string // "include" or "exclude": the Options field
	Pattern string
	Err     error  // path.Match's error for a malformed pattern; nil: it matches nothing
	Names   string // some of the model's tensor names, for the message
	// TiedHead names the model's embeddings (model.embed_tokens.weight,
	// OPT's model.decoder.embed_tokens.weight) when the pattern names
	// lm_head.weight, which a model with tied embeddings does not have:
	// the embeddings are its head too. Empty otherwise.
	TiedHead string
	// Suggest is a pattern one to three edits away from Pattern that does
	// match the model's tensors (a typo: model.embed_token.weight for
	// model.embed_tokens.weight, model.layer.* for model.layers.*); empty
	// when there is none.
	Suggest string
	// Include is set for an exclude pattern that matches tensors, but none
	// that the include patterns (these) select: it would exclude nothing.
	Include []string
}

func (e *PatternError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s pattern %q: %v", e.List, e.Pattern, e.Err)
	}
	if e.Include != nil {
		return fmt.Sprintf("%s pattern %q matches none of the tensors the include patterns %q select, so it excludes nothing: drop it, or correct it or the include patterns",
			e.List, e.Pattern, e.Include)
	}
	msg := fmt.Sprintf("%s pattern %q matches none of the model's tensors", e.List, e.Pattern)
	if e.Suggest != "" {
		msg += fmt.Sprintf(": did you mean %q?", e.Suggest)
	}
	msg += fmt.Sprintf(" (they are named %s)", e.Names)
	if e.TiedHead != "" {
		msg += "; the model's LM head is tied to its embeddings (tie_word_embeddings), so it has no lm_head.weight: " + e.TiedHead + " is both"
		if e.List == "include" {
			msg += ", and including it trains both"
		} else {
			msg += ", and excluding it freezes both"
		}
	}
	return msg
}

func (e *PatternError) Unwrap() error { return e.Err }

// checkPatterns refuses a malformed pattern, one that names no tensor of
// the model, and an exclude pattern that names none of the tensors the
// include patterns select.
func checkPatterns(ts []model.Tensor, opts Options) error {
	for _, l := range []struct {
		name string
		pats []string
	}{{"include", opts.Include}, {"exclude", opts.Exclude}} {
		for _, pat := range l.pats {
			if _, err := path.Match(pat, ""); err != nil {
				return &PatternError{List: l.name, Pattern: pat, Err: err}
			}
			if !matchesSome(ts, pat) {
				return &PatternError{List: l.name, Pattern: pat, Names: someNames(ts), TiedHead: tiedHead(ts, pat), Suggest: suggestPattern(ts, pat)}
			}
		}
	}
	if len(opts.Include) == 0 {
		return nil
	}
	included := slices.DeleteFunc(slices.Clone(ts), func(t model.Tensor) bool { return !matches(opts.Include, t.Name) })
	for _, pat := range opts.Exclude {
		if !matchesSome(included, pat) {
			return &PatternError{List: "exclude", Pattern: pat, Include: opts.Include}
		}
	}
	return nil
}

// suggestPattern is the pattern closest to pat, at most maxEdits edits from it,
// that matches a tensor of ts, or "". Only pat's literal start (up to its
// first *, ? or [) is edited, against the same-length starts of the
// tensors' names (give or take maxEdits characters), so that a glob's typo
// is found as well as a name's; failing that, a Llama name (model.…) is
// tried under OPT's model.decoder.
func suggestPattern(ts []model.Tensor, pat string) string {
	const maxEdits = 3
	prefix, rest := pat, ""
	if i := strings.IndexAny(pat, "*?[\\"); i >= 0 {
		prefix, rest = pat[:i], pat[i:]
	}
	best, bestDist := "", maxEdits+1
	// A typo of one character in a short name is all a short name allows.
	limit := min(maxEdits, max(1, len(prefix)/5))
	for _, t := range ts {
		for n := len(prefix) - limit; n <= len(prefix)+limit; n++ {
			if n < 0 || n > len(t.Name) || rest == "" && n != len(t.Name) {
				continue
			}
			cand := t.Name[:n] + rest
			d := suggest.Distance(prefix, t.Name[:n])
			// Of two as close, the longer keeps what the user typed
			// (model.layer.* is model.layers.*, not model.layer*).
			if d == 0 || d > limit || d > bestDist || d == bestDist && len(cand) <= len(best) || !matchesSome(ts, cand) {
				continue
			}
			best, bestDist = cand, d
		}
	}
	if best == "" && strings.HasPrefix(pat, "model.") {
		// Llama's names on OPT, whose are under model.decoder.
		if cand := "model.decoder." + strings.TrimPrefix(pat, "model."); matchesSome(ts, cand) {
			best = cand
		}
	}
	return best
}

// tiedHead is the name of the embeddings of ts when pat names
// lm_head.weight and ts has none (the head is tied to the embeddings);
// "" otherwise.
func tiedHead(ts []model.Tensor, pat string) string {
	if !matches([]string{pat}, "lm_head.weight") || slices.ContainsFunc(ts, func(t model.Tensor) bool { return t.Name == "lm_head.weight" }) {
		return ""
	}
	for _, t := range ts {
		if strings.HasSuffix(t.Name, "embed_tokens.weight") {
			return t.Name
		}
	}
	return ""
}

// someNames lists the first tensors of ts, those of the first layer
// included, and the last two (the last layer's, the final norm, an untied
// head), for an error message: enough to show how the model names them.
func someNames(ts []model.Tensor) string {
	const first, last = 8, 2
	var names []string
	for i, t := range ts {
		if i == first && len(ts) > first+last {
			names = append(names, "…")
		}
		if i < first || i >= len(ts)-last {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}

// matchesSome says whether pat matches the name of any of ts.
func matchesSome(ts []model.Tensor, pat string) bool {
	return slices.ContainsFunc(ts, func(t model.Tensor) bool { return matches([]string{pat}, t.Name) })
}

// matches says whether name matches one of the patterns.
func matches(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// trains says whether the tensor named name is trained.
func trains(name string, opts Options) bool {
	return (len(opts.Include) == 0 || matches(opts.Include, name)) && !matches(opts.Exclude, name)
}

// Dims implements zo.Store.
func (p *Params) Dims() []int {
	d := make([]int, len(p.groups))
	for g, gr := range p.groups {
		d[g] = int(gr.size)
	}
	return d
}

// Count is the number of trained parameters.
func (p *Params) Count() int64 {
	var n int64
	for _, g := range p.groups {
		n += g.size
	}
	return n
}

// ModelSize is the number of parameters of the whole model, trained or not.
func (p *Params) ModelSize() int64 {
	var n int64
	for _, t := range p.tensors {
		n += int64(t.Size())
	}
	return n
}

// GroupLayer is the first decoder layer group g acts at: a variant that
// perturbs it alone joins the model's base pass there (prefix caching).
func (p *Params) GroupLayer(g int) int { return p.groups[g].layer }

// GroupAt says what group g of a grouped run (Options.Grouped) holds, as
// model.Tensor.Layer numbers it: −1 the embeddings, i decoder layer i,
// NumLayers the final norm (and an untied LM head). Without Options.Grouped
// the one group holds every trained tensor and GroupAt is its first's.
func (p *Params) GroupAt(g int) int { return p.groups[g].at }

// GroupTensors lists the names of group g's tensors, in order.
func (p *Params) GroupTensors(g int) []string {
	var names []string
	for _, i := range p.groups[g].tensors {
		names = append(names, p.tensors[i].Name)
	}
	return names
}

// Tensors lists the trained tensors' names, group by group.
func (p *Params) Tensors() []string {
	var names []string
	for g := range p.groups {
		names = append(names, p.GroupTensors(g)...)
	}
	return names
}

// Variant is the model's view of the engine's variant v: every tensor of
// the groups it perturbs read as θ + scale·z. A variant with no
// perturbation (FZOO's clean point) reads the weights as they are.
func (p *Params) Variant(v zo.Variant) model.Variant {
	if v.Perturbation == nil {
		return model.Variant{}
	}
	pt := v.Perturbation
	w := make([]*tensor.Perturbation, len(p.tensors))
	for k, g := range pt.Groups {
		gr := &p.groups[g]
		for j, i := range gr.tensors {
			w[i] = &tensor.Perturbation{Noise: tensor.Noise{Stream: pt.Streams[k], Dist: pt.Dist, Norm: pt.Norms[k],
				Offset: gr.offsets[j]}, Scale: pt.Scale}
		}
	}
	return model.Variant{Weights: w}
}

// roundingDir is the direction of a group's stream whose words round its
// bfloat16 updates: past every direction a step can draw (zo's maxQ).
const roundingDir = 1<<32 - 1

// Update implements zo.Store: every tensor of group g moved in place on the
// backend, with its optimizer state.
func (p *Params) Update(g int, su zo.StoreUpdate) (ss float64, err error) {
	defer tensor.Recover(&err)
	gr := &p.groups[g]
	p.be.UpdateSquares() // nothing, unless an update failed part way
	rounding := su.Streams[0]
	rounding.Dir = roundingDir
	for j, i := range gr.tensors {
		t := &p.tensors[i]
		rule := su.Rule
		if t.Weight == nil {
			// A vector is a norm's weight or a bias: as MeZO's update, no
			// weight decay there.
			rule.WeightDecay = 0
		}
		u := &tensor.Update{Streams: su.Streams, Dist: su.Dist, Norms: su.Norms, Offset: gr.offsets[j],
			Weights: su.Weights, Rule: rule, Rounding: rounding}
		st := p.moments(i, su.Rule.HasM(), su.Rule.HasV())
		if t.Weight != nil {
			p.be.UpdateWeight(t.Weight, st.m, st.v, u)
		} else {
			p.be.UpdateVector(t.Vector, st.mv, st.vv, t.BF16, u)
		}
	}
	return p.be.UpdateSquares(), nil
}

// moments returns tensor i's optimizer state, made (zeros) on first need.
func (p *Params) moments(i int, hasM, hasV bool) *moments {
	st, t := &p.state[i], &p.tensors[i]
	if t.Weight != nil {
		if hasM && st.m == nil {
			st.m = p.be.NewState(t.Weight)
		}
		if hasV && st.v == nil {
			st.v = p.be.NewState(t.Weight)
		}
	} else {
		if hasM && st.mv == nil {
			st.mv = p.m.Backend.Alloc(t.Cols)
		}
		if hasV && st.vv == nil {
			st.vv = p.m.Backend.Alloc(t.Cols)
		}
	}
	return st
}

// Free releases the optimizer state (the weights are the model's).
func (p *Params) Free() {
	be := p.m.Backend
	for i := range p.state {
		st := &p.state[i]
		for _, w := range []tensor.Weight{st.m, st.v} {
			if w != nil {
				be.FreeWeight(w)
			}
		}
		for _, b := range []tensor.Buf{st.mv, st.vv} {
			if b != nil {
				be.Free(b)
			}
		}
		*st = moments{}
	}
}

// Release frees the optimizer state and lets go of the model's weights,
// so that the model, freed after it, can be collected before another is
// loaded in its place (a run's test evaluation of best/): on the CPU a
// weight is Go memory, which stays resident while p refers to it. p then
// only reports its sizes (Dims, Count, ModelSize, Tensors); Variant,
// Update and the state's methods must not be called.
func (p *Params) Release() {
	p.Free()
	for i := range p.tensors {
		p.tensors[i].Weight, p.tensors[i].Vector = nil, nil
	}
}

var _ zo.Store = (*Params)(nil)
