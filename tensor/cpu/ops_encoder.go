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
		r := encoderRowScratch{p: make([]float32, tokens), p64: make([]uint64, tokens), q64: make([]uint64, hd),
			kt: make([]float32, hd*tokens), scale: math.Float32bits(scale)}
		for sh := lo; sh < hi; sh++ {
			s, h := sh/heads, sh%heads
			base := s * tokens * width
			for j := 0; j < tokens; j++ { // the head's keys, transposed
				for d, x := range k[base+j*width+h*hd : base+j*width+(h+1)*hd] {
					r.kt[d*tokens+j] = x
				}
			}
			for i := 0; i < tokens; i++ {
				qi := q[base+i*width+h*hd : base+i*width+(h+1)*hd]
				r.row(out[base+i*width+h*hd:base+i*width+(h+1)*hd], qi, v[base+h*hd:], width)
			}
		}
	})
}

// encoderRowScratch is what one worker's rows share: the head's keys
// transposed (kt[d·tokens + j] is token j's dimension d), the scores and
// probabilities p, and the float64 bits of the query (q64) and of the
// probabilities (p64), which the vector kernels broadcast through integer
// registers (no legacy SSE among their vector code: ops_simd_amd64.go);
// scale's float32 bits.
type encoderRowScratch struct {
	p        []float32
	p64, q64 []uint64
	kt       []float32
	scale    uint32
}

// row computes one query's output o [hd] from the keys in r.kt and the
// tokens' values, which start at v and are width apart. Each score and each
// output element is one float64 sum in a fixed order (EncoderAttention's
// contract). A sum is a chain of dependent additions, and one chain at a
// time keeps the core waiting on its latency, so encoderScores and
// encoderMix run several side by side (in vector lanes where the CPU has
// them, ops_encoder_simd_amd64.go), each in the same order as alone: the
// same bits as one at a time (encoderRowRef in the tests).
func (r *encoderRowScratch) row(o, qi, v []float32, width int) {
	for d, x := range qi {
		r.q64[d] = math.Float64bits(float64(x))
	}
	p := r.p
	encoderScores(p, r.q64, r.kt, r.scale)
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
	for j := range p {
		p[j] = float32(float64(p[j]) / sum)
		r.p64[j] = math.Float64bits(float64(p[j]))
	}
	encoderMix(o, r.p64, v, width)
}

// encoderScores sets p[j] to the float32 rounding of Σ_d q[d]·k_j[d] (in
// float64, d in order; q64 holds q's values as float64 bits, kt the keys
// transposed) times scale (its float32 bits), for every token j;
// encoderMix sets o[d] to the float32 rounding of Σ_j p[j]·v_j[d] (in
// float64, j in order; p64 holds p's values as float64 bits). The AVX-512
// path replaces them.
var (
	encoderScores = encoderScoresGo
	encoderMix    = encoderMixGo
)

// encoderScoresGo is encoderScores four tokens at a time.
func encoderScoresGo(p []float32, q64 []uint64, kt []float32, scale uint32) {
	n, sc := len(p), math.Float32frombits(scale)
	j := 0
	for ; j+4 <= n; j += 4 {
		var a0, a1, a2, a3 float64
		for d, x := range q64 {
			xd, row := math.Float64frombits(x), kt[d*n+j:d*n+j+4]
			a0 += xd * float64(row[0])
			a1 += xd * float64(row[1])
			a2 += xd * float64(row[2])
			a3 += xd * float64(row[3])
		}
		p[j], p[j+1], p[j+2], p[j+3] = float32(a0)*sc, float32(a1)*sc, float32(a2)*sc, float32(a3)*sc
	}
	encoderScoresTail(p, q64, kt, scale, j)
}

// encoderScoresTail is encoderScores for the tokens from j0 on, one at a
// time.
func encoderScoresTail(p []float32, q64 []uint64, kt []float32, scale uint32, j0 int) {
	n, sc := len(p), math.Float32frombits(scale)
	for j := j0; j < n; j++ {
		var dot float64
		for d, x := range q64 {
			dot += math.Float64frombits(x) * float64(kt[d*n+j])
		}
		p[j] = float32(dot) * sc
	}
}

// encoderMixGo is encoderMix four output elements at a time.
func encoderMixGo(o []float32, p64 []uint64, v []float32, width int) {
	d := 0
	for ; d+4 <= len(o); d += 4 {
		var a0, a1, a2, a3 float64
		for j, pj := range p64 {
			pd, row := math.Float64frombits(pj), v[j*width+d:j*width+d+4]
			a0 += pd * float64(row[0])
			a1 += pd * float64(row[1])
			a2 += pd * float64(row[2])
			a3 += pd * float64(row[3])
		}
		o[d], o[d+1], o[d+2], o[d+3] = float32(a0), float32(a1), float32(a2), float32(a3)
	}
	encoderMixTail(o, p64, v, width, d)
}

// encoderMixTail is encoderMix for the output elements from d0 on, one at
// a time.
func encoderMixTail(o []float32, p64 []uint64, v []float32, width, d0 int) {
	for d := d0; d < len(o); d++ {
		var acc float64
		for j, pj := range p64 {
			acc += math.Float64frombits(pj) * float64(v[j*width+d])
		}
		o[d] = float32(acc)
	}
}

func (b *Backend) GELU(x tensor.Buf) { GELU(b.wk, host(x)) }

func (b *Backend) EncoderAttention(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	EncoderAttention(b.wk, host(out), host(q), host(k), host(v), seqs, tokens, heads, hd, scale)
}
