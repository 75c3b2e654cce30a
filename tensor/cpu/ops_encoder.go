package cpu

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// The operations of a ViT encoder block beyond OPT's: attention without a
// causal mask or a cache (here) and the exact GELU (gelu.go). They are
// written so that the CUDA kernels (encoder_attention.cu, gelu.cu) can
// follow them operation by operation: products of two float32 values are
// exact in float64, and every sum runs in one fixed order.

// EncoderAttention is tensor.Backend's EncoderAttention: for every sequence,
// head and query token, softmax(scale·q·kᵀ)·v over all the sequence's
// tokens. A score is the float64 sum of the exact products over the head's
// dimensions in order, rounded to float32, times scale in float32; the
// softmax subtracts the row's largest score, takes the CPU's float32 Exp, and
// divides each exponential by their float64 sum (in token order), rounding
// the probability to float32; an output is the float64 sum over tokens in
// order of probability × value, rounded once.
func EncoderAttention(wk Workers, out, q, k, v []float32, seqs, tokens, heads, hd int, scale float32) {
	width := heads * hd
	wk.For(seqs*heads, func(lo, hi int) {
		r := newEncoderRowScratch(tokens, hd, scale)
		for sh := lo; sh < hi; sh++ {
			s, h := sh/heads, sh%heads
			base := s*tokens*width + h*hd
			r.load(k[base:], v[base:], width)
			at := func(b []float32, i int) []float32 { return b[base+i*width : base+i*width+hd] }
			i := 0
			for ; i+1 < tokens; i += 2 {
				r.pair(at(out, i), at(q, i), at(out, i+1), at(q, i+1))
			}
			if i < tokens {
				r.row(at(out, i), at(q, i))
			}
		}
	})
}

// encoderRowScratch is what one worker's rows share: one head's keys
// transposed and its values, both widened to float64 once for all its
// query tokens (kt[d·lanes + j] is token j's dimension d, the lanes past
// the last token zero; vals[j·hd + d]); scale's float32 bits; and the
// buffers of the two queries pair computes at once (encoderQuery).
type encoderRowScratch struct {
	tokens, lanes int
	hd            int
	kt, vals      []float64
	scale         uint32
	q             [2]encoderQuery
}

// encoderQuery is one query's scratch: its scores s over whole groups of 8
// lanes (the first tokens of them are the scores, then the probabilities),
// and the float64 bits of the query (q64) and of the probabilities (p64),
// which the vector kernels broadcast through integer registers (no legacy
// SSE among their vector code: ops_simd_amd64.go).
type encoderQuery struct {
	s        []float32
	p64, q64 []uint64
}

func newEncoderRowScratch(tokens, hd int, scale float32) *encoderRowScratch {
	lanes := (tokens + 7) &^ 7
	r := &encoderRowScratch{tokens: tokens, lanes: lanes, hd: hd, kt: make([]float64, hd*lanes), vals: make([]float64, tokens*hd), scale: math.Float32bits(scale)}
	for i := range r.q {
		r.q[i] = encoderQuery{s: make([]float32, lanes), p64: make([]uint64, tokens), q64: make([]uint64, hd)}
	}
	return r
}

// load widens one head's keys (transposed) and values, token j's at
// k[j·width:] and v[j·width:].
func (r *encoderRowScratch) load(k, v []float32, width int) {
	hd := r.hd
	for j := 0; j < r.tokens; j++ {
		for d, x := range k[j*width : j*width+hd] {
			r.kt[d*r.lanes+j] = float64(x)
		}
		for d, x := range v[j*width : j*width+hd] {
			r.vals[j*hd+d] = float64(x)
		}
	}
}

// row computes one query's output o [hd] from the head that load read. Each
// score and each output element is one float64 sum in a fixed order
// (EncoderAttention's contract). A sum is a chain of dependent additions,
// and one chain at a time keeps the core waiting on its latency, so
// encoderSums runs several side by side (in vector lanes where the CPU has
// them, ops_encoder_simd_amd64.go), each in the same order as alone: the
// same bits as one at a time (encoderRowRef in the tests). The scores are
// summed over whole groups of 8 lanes; the lanes past the last token sum
// zeros and are not read.
func (r *encoderRowScratch) row(o, qi []float32) {
	a := &r.q[0]
	a.widen(qi)
	encoderSums(a.s, a.q64, r.kt, r.lanes, r.scale) // the scores
	a.softmax(r.tokens)
	encoderSums(o, a.p64, r.vals, len(o), one32) // the output
}

// pair is row for two queries at once, with row's bits: encoderSums2 reads
// each key and value once for both, where the loads, not the multiply-adds,
// bound a query alone (the head's keys and values are past L1).
func (r *encoderRowScratch) pair(o0, q0, o1, q1 []float32) {
	a, b := &r.q[0], &r.q[1]
	a.widen(q0)
	b.widen(q1)
	encoderSums2(a.s, b.s, a.q64, b.q64, r.kt, r.lanes, r.scale)
	softmax2(a, b, r.tokens)
	encoderSums2(o0, o1, a.p64, b.p64, r.vals, len(o0), one32)
}

// widen keeps the float64 bits of the query's elements.
func (e *encoderQuery) widen(qi []float32) {
	for d, x := range qi {
		e.q64[d] = math.Float64bits(float64(x))
	}
}

// softmax turns the first tokens scores into probabilities (float32 in s,
// their float64 bits in p64): the largest score subtracted, the CPU's Exp,
// each divided by the float64 sum in token order.
func (e *encoderQuery) softmax(tokens int) {
	p := e.s[:tokens]
	m := float32(math.Inf(-1))
	for _, x := range p {
		if x > m { // as the CUDA kernel compares
			m = x
		}
	}
	expSub(p, m) // p[j] = Exp(p[j] − m), on vector lanes where the CPU has them
	var sum float64
	for _, x := range p {
		sum += float64(x)
	}
	encoderNormalize(p, e.p64, sum)
}

// softmax2 is softmax of two queries, their largest scores and sums found
// in one loop: each is a chain of dependent steps in token order (the
// contract's), and two side by side wait half as long on their latency.
func softmax2(a, b *encoderQuery, tokens int) {
	pa := a.s[:tokens]
	pb := b.s[:len(pa)] // as long as pa: no bounds checks in the loops
	ma, mb := float32(math.Inf(-1)), float32(math.Inf(-1))
	for j, x := range pa {
		if x > ma { // as the CUDA kernel compares
			ma = x
		}
		if y := pb[j]; y > mb {
			mb = y
		}
	}
	expSub(pa, ma)
	expSub(pb, mb)
	var sa, sb float64
	for j, x := range pa {
		sa += float64(x)
		sb += float64(pb[j])
	}
	encoderNormalize(pa, a.p64, sa)
	encoderNormalize(pb, b.p64, sb)
}

// encoderNormalize divides each exponential p[j] by their sum in float64,
// rounds the probability to float32 into p[j] and keeps its float64 bits in
// p64[j]. The AVX-512 path replaces it (eight lanes; a division rounds alike
// in a lane).
var encoderNormalize = encoderNormalizeGo

func encoderNormalizeGo(p []float32, p64 []uint64, sum float64) {
	for j := range p {
		p[j] = float32(float64(p[j]) / sum)
		p64[j] = math.Float64bits(float64(p[j]))
	}
}

// encoderSums sets out[c] to the float32 rounding of Σ_i c_i·m[i·stride + c]
// (in float64, i in order; coef holds the c_i as float64 bits) times scale
// (its float32 bits). The coefficients and m are float32 values widened, so
// every product is exact and a fused multiply-add rounds as the sum of the
// product would. The scores are such sums over the head's dimensions (coef:
// the query; m: the keys transposed, stride the lanes), the outputs over
// the tokens (coef: the probabilities; m: the values, stride the head's
// size; scale 1, which leaves every float32 as it is). The AVX-512 path
// replaces it.
var encoderSums = encoderSumsGo

// encoderSums2 is encoderSums for two coefficient vectors of the same
// length over the same m, out0 and out1 of the same length: the same bits
// as two calls. The AVX-512 path replaces it.
var encoderSums2 = encoderSums2Go

func encoderSums2Go(out0, out1 []float32, coef0, coef1 []uint64, m []float64, stride int, scale uint32) {
	encoderSums(out0, coef0, m, stride, scale)
	encoderSums(out1, coef1, m, stride, scale)
}

// one32 is the float32 bits of 1.
const one32 = 0x3f800000

// encoderSumsGo is encoderSums four outputs at a time.
func encoderSumsGo(out []float32, coef []uint64, m []float64, stride int, scale uint32) {
	sc := math.Float32frombits(scale)
	c := 0
	for ; c+4 <= len(out); c += 4 {
		var a0, a1, a2, a3 float64
		for i, x := range coef {
			xi, row := math.Float64frombits(x), m[i*stride+c:i*stride+c+4]
			a0 += xi * row[0]
			a1 += xi * row[1]
			a2 += xi * row[2]
			a3 += xi * row[3]
		}
		out[c], out[c+1], out[c+2], out[c+3] = float32(a0)*sc, float32(a1)*sc, float32(a2)*sc, float32(a3)*sc
	}
	encoderSumsTail(out, coef, m, stride, scale, c)
}

// encoderSumsTail is encoderSums for the outputs from c0 on, one at a time.
func encoderSumsTail(out []float32, coef []uint64, m []float64, stride int, scale uint32, c0 int) {
	sc := math.Float32frombits(scale)
	for c := c0; c < len(out); c++ {
		var acc float64
		for i, x := range coef {
			acc += math.Float64frombits(x) * m[i*stride+c]
		}
		out[c] = float32(acc) * sc
	}
}

func (b *Backend) GELU(x tensor.Buf) { GELU(b.wk, host(x)) }

func (b *Backend) EncoderAttention(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	EncoderAttention(b.wk, host(out), host(q), host(k), host(v), seqs, tokens, heads, hd, scale)
}
