package zo

import (
	"runtime"
	"sync"

	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// hostParams is θ as host slices (an adapter's parameters). Perturbed
// points θ0 ± εz are written into buffers of the engine's, never by moving
// θ in place, so θ0 is restored exactly; the buffers (2q·d floats, q·d for
// FZOO) are kept between steps. θ is updated in place at the end of a step.
type hostParams struct {
	e      *Engine
	params [][]float32
	bufs   [][][]float32 // bufs[g][slot]: perturbed copies of group g
	kept   [2]*stepNoise // drawn noise of up to two steps (this one and the next), when kept at all
	keep   bool          // whether noise is kept (keptNoiseMax)
}

// keptNoiseMax bounds the noise values (q·d) a step may keep; the engine
// holds two steps' worth (4 bytes each).
const keptNoiseMax = 16 << 20

func newHostParams(e *Engine, params [][]float32) *hostParams {
	total := 0
	for _, d := range e.dims {
		total += d
	}
	return &hostParams{e: e, params: params, bufs: make([][][]float32, len(params)),
		keep: e.cfg.Q <= keptNoiseMax/total} // q·d ≤ keptNoiseMax, without overflow
}

func (h *hostParams) base() [][]float32 { return h.params }

// stepNoise is the noise of one step, drawn in full: z[g][j] for each group
// the step perturbs and direction j, and sphere noise's norms.
type stepNoise struct {
	step  int
	norms noiseNorms
	z     [][][]float32
	ready chan struct{} // closed once z and norms are drawn
}

func (h *hostParams) buf(g, slot int) []float32 {
	for len(h.bufs[g]) <= slot {
		h.bufs[g] = append(h.bufs[g], make([]float32, h.e.dims[g]))
	}
	return h.bufs[g][slot]
}

// chunkTask is one chunk of one group of one unit.
type chunkTask struct{ u, g, lo, hi int }

func (h *hostParams) chunkTasks(units []unit) []chunkTask {
	var ts []chunkTask
	for ui, u := range units {
		for _, g := range u.groups {
			for c := range noise.NumChunks(h.e.dims[g]) {
				lo, hi := noise.ChunkRange(c, h.e.dims[g])
				ts = append(ts, chunkTask{ui, g, lo, hi})
			}
		}
	}
	return ts
}

var chunkPool = sync.Pool{New: func() any { return &chunkScratch{} }}

type chunkScratch struct {
	z    [noise.ChunkSize]float32
	ghat [noise.ChunkSize]float64
}

// norms returns the norms of step's sphere noise, from the kept draw when
// there is one.
func (h *hostParams) norms(step int, units []unit) noiseNorms {
	if z := h.noise(step); z != nil {
		return z.norms
	}
	return h.e.sphereNorms(step, units, h.e.cfg.Workers)
}

// noise returns step's noise drawn in full, waiting for a draw under way,
// or nil when the engine does not keep noise.
func (h *hostParams) noise(step int) *stepNoise {
	if !h.keep {
		return nil
	}
	if n := h.keptFor(step); n != nil {
		<-n.ready
		return n
	}
	n := h.slotFor(step)
	h.draw(n, h.e.cfg.Workers)
	return n
}

// keptFor returns the kept slot for step's noise (drawn or being drawn),
// or nil.
func (h *hostParams) keptFor(step int) *stepNoise {
	for _, n := range h.kept {
		if n != nil && n.step == step {
			return n
		}
	}
	return nil
}

// drawAhead starts drawing step's noise in the background, unless the
// engine does not keep noise, step is beyond the counter, or it is drawn
// already.
func (h *hostParams) drawAhead(step int) {
	if !h.keep || uint64(step) > 1<<32-1 || h.keptFor(step) != nil {
		return
	}
	n := h.slotFor(step)
	// Half the workers: the objective runs meanwhile (a GPU backend's
	// launches, a CPU backend's forward). The values do not depend on it.
	workers := h.e.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	go h.draw(n, max(1, workers/2))
}

// slotFor readies a kept slot for step's noise: one not holding the
// current step's, once any draw into it has finished.
func (h *hostParams) slotFor(step int) *stepNoise {
	i := 0
	if n := h.kept[0]; n != nil && n.step == h.e.step && step != h.e.step {
		i = 1
	}
	n := h.kept[i]
	if n == nil {
		n = &stepNoise{}
		h.kept[i] = n
	} else {
		<-n.ready
	}
	n.step, n.ready = step, make(chan struct{})
	return n
}

// draw fills n with its step's noise, chunk by chunk as perturb and update
// would draw it, on workers goroutines, and closes n.ready.
func (h *hostParams) draw(n *stepNoise, workers int) {
	defer close(n.ready)
	e := h.e
	units := e.units(n.step)
	n.norms = e.sphereNorms(n.step, units, workers)
	if n.z == nil {
		n.z = make([][][]float32, len(h.params))
	}
	for _, u := range units {
		for _, g := range u.groups {
			for len(n.z[g]) < e.cfg.Q {
				n.z[g] = append(n.z[g], make([]float32, e.dims[g]))
			}
		}
	}
	tasks := h.chunkTasks(units)
	parallel.For(len(tasks), workers, func(k int) {
		tk := tasks[k]
		for j := range e.cfg.Q {
			e.stream(n.step, tk.g, j).FillRange(n.z[tk.g][j][tk.lo:tk.hi], tk.lo, e.cfg.Dist, n.norms.at(tk.g, j))
		}
	})
}

// perturb materialises θ0 ± εz from θ0 in the buffers, chunk by chunk in
// parallel: slot 2j holds +, 2j+1 holds - (FZOO: slot j holds +). z is
// drawn here unless it is kept.
func (h *hostParams) perturb(step int, units []unit, norms noiseNorms) {
	e := h.e
	q, eps, oneSided := e.cfg.Q, e.cfg.Eps, e.opt.oneSided()
	for _, u := range units {
		for _, g := range u.groups {
			for j := range q {
				if oneSided {
					h.buf(g, j)
				} else {
					h.buf(g, 2*j+1)
				}
			}
		}
	}
	kept := h.noise(step)
	tasks := h.chunkTasks(units)
	parallel.For(len(tasks), e.cfg.Workers, func(k int) {
		tk := tasks[k]
		theta := h.params[tk.g][tk.lo:tk.hi]
		for j := range q {
			if oneSided {
				plus := h.bufs[tk.g][j][tk.lo:tk.hi]
				for i, z := range h.chunkNoise(step, tk, j, kept, norms, plus) {
					plus[i] = noise.Perturbed(theta[i], eps, z)
				}
				continue
			}
			plus, minus := h.bufs[tk.g][2*j][tk.lo:tk.hi], h.bufs[tk.g][2*j+1][tk.lo:tk.hi]
			for i, z := range h.chunkNoise(step, tk, j, kept, norms, minus) {
				plus[i], minus[i] = noise.Perturbed(theta[i], eps, z), noise.Perturbed(theta[i], -eps, z)
			}
		}
	})
}

// chunkNoise returns direction j's z on chunk tk of step: kept's values,
// or drawn into scratch (len tk.hi-tk.lo) when nothing is kept.
func (h *hostParams) chunkNoise(step int, tk chunkTask, j int, kept *stepNoise, norms noiseNorms, scratch []float32) []float32 {
	if kept != nil {
		return kept.z[tk.g][j][tk.lo:tk.hi]
	}
	h.e.stream(step, tk.g, j).FillRange(scratch, tk.lo, h.e.cfg.Dist, norms.at(tk.g, j))
	return scratch
}

// variants lists the step's variants, in order: [clean (FZOO)], then per
// unit, per direction, + (and -). Unperturbed groups share θ0's slices.
func (h *hostParams) variants(step int, units []unit, norms noiseNorms) []Variant {
	e := h.e
	var variants []Variant
	if e.opt.oneSided() {
		variants = append(variants, Variant{Group: Clean, Params: h.params})
	}
	for _, u := range units {
		for j := range e.cfg.Q {
			for s, sign := range e.signs() {
				p := make([][]float32, len(h.params))
				copy(p, h.params)
				for _, g := range u.groups {
					slot := 2*j + s
					if e.opt.oneSided() {
						slot = j
					}
					p[g] = h.bufs[g][slot]
				}
				variants = append(variants, Variant{Group: u.label(), Dir: j, Sign: sign, Params: p})
			}
		}
	}
	return variants
}

// update moves θ in place chunk by chunk in parallel, forming
// ĝ = Σ_j w_j z_j from the kept z or z drawn again, and returns
// ‖θ_new - θ0‖²: chunk sums added in chunk order.
func (h *hostParams) update(step int, units []unit, norms noiseNorms, weights [][]float64) (float64, error) {
	e := h.e
	kept := h.noise(step)
	rules := make([]update.Rule, len(units))
	for ui, u := range units {
		rules[ui] = e.rule(u, step)
	}
	tasks := h.chunkTasks(units)
	sq := make([]float64, len(tasks))
	parallel.For(len(tasks), e.cfg.Workers, func(k int) {
		tk := tasks[k]
		n := tk.hi - tk.lo
		sc := chunkPool.Get().(*chunkScratch)
		defer chunkPool.Put(sc)
		z, ghat := sc.z[:n], sc.ghat[:n]
		clear(ghat)
		for j, w := range weights[tk.u] {
			for i, zi := range h.chunkNoise(step, tk, j, kept, norms, z) {
				ghat[i] += float64(w * float64(zi))
			}
		}
		sq[k] = h.apply(&rules[tk.u], tk, ghat)
	})
	var ss float64
	for _, s := range sq {
		ss += s
	}
	return ss, nil
}

// apply moves the task's coordinates by rule, those of Config.NoDecay
// without its weight decay, and returns Σ (θ_new − θ_old)².
func (h *hostParams) apply(rule *update.Rule, tk chunkTask, ghat []float64) float64 {
	m, v := h.e.opt.state(tk.g)
	theta := h.params[tk.g]
	piece := func(r *update.Rule, lo, hi int) float64 {
		return r.Apply(theta[lo:hi], ghat[lo-tk.lo:hi-tk.lo], span(m, lo, hi), span(v, lo, hi))
	}
	if rule.WeightDecay == 0 {
		return piece(rule, tk.lo, tk.hi)
	}
	noDecay := *rule
	noDecay.WeightDecay = 0
	var ss float64
	at := tk.lo
	for _, sp := range h.e.cfg.NoDecay {
		lo, hi := max(sp.Lo, at), min(sp.Hi, tk.hi)
		if sp.Group != tk.g || lo >= hi {
			continue
		}
		ss += piece(rule, at, lo)
		ss += piece(&noDecay, lo, hi)
		at = hi
	}
	return ss + piece(rule, at, tk.hi)
}

// span is s[lo:hi], or nil for a nil s.
func span(s []float32, lo, hi int) []float32 {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}
