package cpu

import (
	"math"
	"sync"
	"unsafe"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/update"
)

// The CPU backend trains a model's own weights where they are: in their
// packed panels (tensor.Trainer). A weight is read perturbed by the GEMM
// (gemm_perturbed.go) and updated panel by panel in place: the noise of 32
// rows is drawn along K, turned into ĝ in the panel's layout, and the
// update rule runs over the panel's contiguous slice, with the optimizer
// state in the same layout. Panels are independent tasks whose sums of
// squares are added in panel order, so results do not depend on the
// number of workers.

var _ tensor.Trainer = (*Backend)(nil)

// MatMulPerturbed implements tensor.Trainer.
func (b *Backend) MatMulPerturbed(y, x tensor.Buf, w tensor.Weight, segs []tensor.Segment, add bool) {
	p := packed(w)
	rows := 0
	for _, s := range segs {
		rows += s.Rows
	}
	if !add {
		MatMulPackedPerturbed(b.wk, host(y), host(x), rows, p, segs)
		return
	}
	// As MatMulAdd: the product rounded to float32, then added.
	tmp := getScratch(rows * p.N)
	MatMulPackedPerturbed(b.wk, *tmp, host(x), rows, p, segs)
	Add(b.wk, host(y)[:rows*p.N], *tmp)
	scratch.Put(tmp)
}

// RowsPerturbed implements tensor.Trainer.
func (b *Backend) RowsPerturbed(dst tensor.Buf, w tensor.Weight, ids []int, pt *tensor.Perturbation) {
	b.Rows(dst, w, ids)
	if pt == nil {
		return
	}
	p, d := packed(w), host(dst)
	b.wk.For(len(ids), func(lo, hi int) {
		z := make([]float32, p.K)
		for i := lo; i < hi; i++ {
			pt.Stream.FillRange(z, int(pt.Offset)+ids[i]*p.K, pt.Dist, pt.Norm)
			row := d[i*p.K : (i+1)*p.K]
			for k, v := range row {
				row[k] = noise.Perturbed(v, pt.Scale, z[k])
			}
		}
	})
}

// Perturb implements tensor.Trainer.
func (b *Backend) Perturb(dst, src tensor.Buf, pt *tensor.Perturbation) {
	d, s := host(dst), host(src)[:dst.Len()]
	pt.Stream.FillRange(d, int(pt.Offset), pt.Dist, pt.Norm)
	for i, v := range s {
		d[i] = noise.Perturbed(v, pt.Scale, d[i])
	}
}

// NewState implements tensor.Trainer: float32 panels like w's.
func (*Backend) NewState(w tensor.Weight) tensor.Weight {
	p := packed(w)
	return &Packed{N: p.N, K: p.K, data: make([]float32, panels(p.N)*p.K*nr)}
}

// updateChunk is the K depth of one piece of a panel's update: ĝ of 32
// rows × 256 columns in float64, 64 KiB.
const updateChunk = 256

// UpdateWeight implements tensor.Trainer.
func (b *Backend) UpdateWeight(w, m, v tensor.Weight, u *tensor.Update) {
	b.squares += b.updateWeight(w, m, v, u)
}

// UpdateVector implements tensor.Trainer.
func (b *Backend) UpdateVector(x, m, v tensor.Buf, bf16 bool, u *tensor.Update) {
	b.squares += updateVector(x, m, v, bf16, u)
}

// UpdateSquares implements tensor.Trainer.
func (b *Backend) UpdateSquares() float64 {
	ss := b.squares
	b.squares = 0
	return ss
}

// updateWeight moves w (panel by panel, in parallel) and returns its
// Σ Δθ²: the panels' sums added in panel order.
func (b *Backend) updateWeight(w, m, v tensor.Weight, u *tensor.Update) float64 {
	p := packed(w)
	if err := u.Check(); err != nil {
		panic(err)
	}
	var md, vd []float32
	if m != nil {
		md = packed(m).data
	}
	if v != nil {
		vd = packed(v).data
	}
	np := panels(p.N)
	sums := make([]float64, np)
	b.wk.Tasks(np, func(pi int) {
		sc := updateScratches.Get().(*updateScratch)
		defer updateScratches.Put(sc)
		for k0 := 0; k0 < p.K; k0 += updateChunk {
			sums[pi] += updatePiece(sc, u, p, md, vd, pi, k0, min(updateChunk, p.K-k0))
		}
	})
	var ss float64
	for _, s := range sums {
		ss += s
	}
	return ss
}

// updatePiece applies u to columns [k0, k0+kc) of panel pi of p (and its
// state md, vd) and returns the sum of squared changes. MEAZO's, ZO-SGD's
// and FZOO's rule (SGD without momentum) has loops of its own, float32 and
// bfloat16; at q = 1 ĝ = w·z is formed as it is applied, with no float64 ĝ
// in between (the same bits). The rules with state run stateValues on
// float32 weights, stateBF16 on bfloat16 ones.
func updatePiece(sc *updateScratch, u *tensor.Update, p *Packed, md, vd []float32, pi, k0, kc int) float64 {
	lo, hi := (pi*p.K+k0)*nr, (pi*p.K+k0+kc)*nr
	sgd := u.Rule.Kind == update.SGD && md == nil
	lr, wd := u.Rule.LR, u.Rule.WeightDecay
	if sgd {
		prefetchPiece(p, lo, hi)
	}
	if sgd && len(u.Streams) == 1 {
		z := sc.zp[:kc*nr]
		u.Streams[0].FillPanel(z, int(u.Offset)+pi*nr*p.K+k0, p.K, min(nr, p.N-pi*nr), kc, nr, u.Dist, u.Norms[0])
		if p.data16 == nil {
			return sgdDirection(p.data[lo:hi], z, u.Weights[0], lr, wd)
		}
		roundingWords(sc, u, p, pi, k0, kc)
		return sgdDirectionBF16(p.data16[lo:hi], z, sc.rnd[:kc*nr], u.Weights[0], lr, wd)
	}
	ghat, rnd := sc.ghat[:kc*nr], sc.rnd[:kc*nr]
	panelGhat(sc, u, p, pi, k0, kc)
	switch {
	case p.data16 != nil && sgd:
		return sgdBF16(p.data16[lo:hi], ghat, rnd, lr, wd)
	case p.data16 != nil:
		return stateBF16(&u.Rule, p.data16[lo:hi], ghat, span(md, lo, hi), span(vd, lo, hi), rnd)
	case sgd:
		return sgdValues(p.data[lo:hi], ghat, lr, wd)
	default:
		return stateValues(&u.Rule, p.data[lo:hi], ghat, span(md, lo, hi), span(vd, lo, hi))
	}
}

// prefetchPiece fetches elements [lo, hi) of a panel's weights from memory
// while the piece's noise is drawn, for plain SGD (MEAZO, ZO-SGD, FZOO),
// whose update is one light pass over every weight: without it each piece
// waited for its weights after its noise (Qwen3-0.6B's step, 2 threads of a
// newer Xeon: the update took 0.81 s, 0.47 s with it). The rules with
// optimizer state fetch nothing ahead: their loops are bound by their
// arithmetic (ZO-Adam's and R-AdaZO's divisions), the hardware's own
// prefetching keeps up with them, and fetching θ, m and v ahead stalled
// them on the fetches (BenchmarkUpdateWeight, the same Xeon: ZO-Adam 55 →
// 45 ms, R-AdaZO the same, momentum within ±7 % either way).
func prefetchPiece(p *Packed, lo, hi int) {
	if p.data16 == nil {
		prefetchL2(unsafe.Pointer(&p.data[lo]), 4*(hi-lo))
	} else {
		prefetchL2(unsafe.Pointer(&p.data16[lo]), 2*(hi-lo))
	}
}

// updateScratch is a worker's room for one piece of a panel's update: ĝ in
// the panel's layout, one direction's noise in the panel's layout (drawn
// so), and for bfloat16 the rounding words row by row as drawn and in the
// panel's layout.
type updateScratch struct {
	ghat  [updateChunk * nr]float64
	zp    [updateChunk * nr]float32
	rowsW [updateChunk * nr]uint32
	rnd   [updateChunk * nr]uint32
}

var updateScratches = sync.Pool{New: func() any { return new(updateScratch) }}

// panelGhat writes into sc.ghat ĝ of columns [k0, k0+kc) of panel pi of p
// in the panel's layout (zero in padding columns), direction by direction,
// and, for a bfloat16 panel, the rounding words into sc.rnd likewise. Each
// direction's noise is drawn in the panel's layout (noise.FillPanel) before
// it is added.
func panelGhat(sc *updateScratch, u *tensor.Update, p *Packed, pi, k0, kc int) {
	cols, g := min(nr, p.N-pi*nr), sc.ghat[:kc*nr]
	clear(g)
	for d, st := range u.Streams {
		st.FillPanel(sc.zp[:kc*nr], int(u.Offset)+pi*nr*p.K+k0, p.K, cols, kc, nr, u.Dist, u.Norms[d])
		addScaled(g, sc.zp[:kc*nr], u.Weights[d])
	}
	if p.data16 != nil {
		roundingWords(sc, u, p, pi, k0, kc)
	}
}

// roundingWords writes into sc.rnd the words that round a bfloat16 panel's
// update, in the panel's layout: drawn row by row (a contiguous run of the
// rounding stream per row), then moved into the layout.
func roundingWords(sc *updateScratch, u *tensor.Update, p *Packed, pi, k0, kc int) {
	cols := min(nr, p.N-pi*nr)
	for col := range cols {
		u.Rounding.FillBits(sc.rowsW[col*kc:(col+1)*kc], int(u.Offset)+(pi*nr+col)*p.K+k0)
	}
	toPanel(sc.rnd[:kc*nr], sc.rowsW[:], cols, kc, kc)
}

// updateVector moves x in one piece (vectors are a layer's width) and
// returns its Σ Δθ².
func updateVector(x, m, v tensor.Buf, bf16 bool, u *tensor.Update) float64 {
	if err := u.Check(); err != nil {
		panic(err)
	}
	theta := host(x)
	n := len(theta)
	g := make([]float64, n)
	z := make([]float32, n)
	for d, st := range u.Streams {
		st.FillRange(z, int(u.Offset), u.Dist, u.Norms[d])
		for i, zv := range z {
			g[i] += float64(u.Weights[d] * float64(zv))
		}
	}
	var md, vd []float32
	if m != nil {
		md = host(m)
	}
	if v != nil {
		vd = host(v)
	}
	if !bf16 {
		return u.Rule.Apply(theta, g, md, vd)
	}
	// bfloat16 values held as float32: rounded as ApplyBF16 rounds them.
	bits := make([]uint16, n)
	for i, t := range theta {
		bits[i] = uint16(math.Float32bits(t) >> 16)
	}
	words := make([]uint32, n)
	u.Rounding.FillBits(words, int(u.Offset))
	ss := u.Rule.ApplyBF16(bits, g, md, vd, words)
	for i, h := range bits {
		theta[i] = update.BF16ToFloat32(h)
	}
	return ss
}

// span is s[lo:hi], or nil for a nil s.
func span(s []float32, lo, hi int) []float32 {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}
