package cpu

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// The operations of a ViT encoder block beyond OPT's: the exact GELU and
// attention without a causal mask or a cache. They are scalar loops written
// so that the CUDA kernels (gelu.cu, encoder_attention.cu) can follow them
// operation by operation: products of two float32 values are exact in
// float64, and every sum runs in one fixed order.

// sqrt1_2 is 1/√2 rounded to float64 (C's M_SQRT1_2, which torch's GELU
// and the CUDA kernel multiply by).
const sqrt1_2 = 0.70710678118654752440084436210484903928483593768847

// geluScalar is HF's "gelu" (torch's exact GELU): x·½·(1 + erf(x/√2)),
// evaluated in float64 and rounded once to float32.
func geluScalar(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Erf(v*sqrt1_2)))
}

// GELU applies geluScalar to every element of x.
func GELU(wk Workers, x []float32) {
	const chunk = 1 << 14
	wk.For((len(x)+chunk-1)/chunk, func(lo, hi int) {
		for i := lo * chunk; i < min(hi*chunk, len(x)); i++ {
			x[i] = geluScalar(x[i])
		}
	})
}

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
		p := make([]float32, tokens)
		for sh := lo; sh < hi; sh++ {
			s, h := sh/heads, sh%heads
			base := s * tokens * width
			for i := 0; i < tokens; i++ {
				qi := q[base+i*width+h*hd : base+i*width+(h+1)*hd]
				encoderRow(out[base+i*width+h*hd:base+i*width+(h+1)*hd], qi, k[base+h*hd:], v[base+h*hd:], p, width, scale)
			}
		}
	})
}

// encoderRow computes one query's output o [hd] from the tokens' keys and
// values, which start at k and v and are width apart; p is scratch of one
// float32 per token.
func encoderRow(o, qi, k, v, p []float32, width int, scale float32) {
	hd := len(qi)
	m := float32(math.Inf(-1))
	for j := range p {
		kj := k[j*width : j*width+hd]
		var dot float64
		for d, x := range qi {
			dot += float64(x) * float64(kj[d])
		}
		p[j] = float32(dot) * scale
		if p[j] > m { // as the CUDA kernel compares
			m = p[j]
		}
	}
	var sum float64
	for j := range p {
		p[j] = Exp(p[j] - m)
		sum += float64(p[j])
	}
	for j := range p {
		p[j] = float32(float64(p[j]) / sum)
	}
	for d := range o {
		var acc float64
		for j, pj := range p {
			acc += float64(pj) * float64(v[j*width+d])
		}
		o[d] = float32(acc)
	}
}

func (b *Backend) GELU(x tensor.Buf) { GELU(b.wk, host(x)) }

func (b *Backend) EncoderAttention(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	EncoderAttention(b.wk, host(out), host(q), host(k), host(v), seqs, tokens, heads, hd, scale)
}
