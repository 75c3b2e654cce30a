package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEncoderAttention: against a float64 softmax attention over all
// tokens (no mask), and the same bits whatever the worker count.
func TestEncoderAttention(t *testing.T) {
	const seqs, tokens, heads, hd = 3, 17, 4, 8
	width := heads * hd
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, seqs*tokens*width)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	q, k, v := vec(), vec(), vec()
	scale := float32(1 / math.Sqrt(hd))
	got := make([]float32, len(q))
	EncoderAttention(1, got, q, k, v, seqs, tokens, heads, hd, scale)
	for s := 0; s < seqs; s++ {
		for h := 0; h < heads; h++ {
			for i := 0; i < tokens; i++ {
				at := func(b []float32, tok, d int) float64 { return float64(b[(s*tokens+tok)*width+h*hd+d]) }
				scores := make([]float64, tokens)
				var m float64 = math.Inf(-1)
				for j := range scores {
					for d := 0; d < hd; d++ {
						scores[j] += at(q, i, d) * at(k, j, d)
					}
					scores[j] *= float64(scale)
					m = max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - m)
					sum += scores[j]
				}
				for d := 0; d < hd; d++ {
					var want float64
					for j := range scores {
						want += scores[j] / sum * at(v, j, d)
					}
					if g := float64(got[(s*tokens+i)*width+h*hd+d]); math.Abs(g-want) > 2e-6 {
						t.Fatalf("seq %d head %d token %d dim %d: %v, want %v", s, h, i, d, g, want)
					}
				}
			}
		}
	}
	again := make([]float32, len(q))
	EncoderAttention(5, again, q, k, v, seqs, tokens, heads, hd, scale)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
			t.Fatalf("element %d: %v with 1 worker, %v with 5", i, got[i], again[i])
		}
	}
}

// encoderRowRef is encoderRow one score and one output element at a time,
// as it was first written (and as the CUDA kernel computes each): the
// contract's order, without the side-by-side chains.
func encoderRowRef(o, qi, k, v, p []float32, width int, scale float32) {
	hd := len(qi)
	m := float32(math.Inf(-1))
	for j := range p {
		kj := k[j*width : j*width+hd]
		var dot float64
		for d, x := range qi {
			dot += float64(x) * float64(kj[d])
		}
		p[j] = float32(dot) * scale
		if p[j] > m {
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

// TestEncoderRowMatchesRef: the side-by-side chains (and, where the CPU has
// them, the vector lanes) give the one-at-a-time bits, for token counts and
// head sizes on and off the lane groups' multiples.
func TestEncoderRowMatchesRef(t *testing.T) {
	type impl struct {
		name string
		sums func(out []float32, coef []uint64, m []float64, stride int, scale uint32)
	}
	impls := []impl{{"go", encoderSumsGo}, {"in use", encoderSums}}
	defer func(s func(out []float32, coef []uint64, m []float64, stride int, scale uint32)) { encoderSums = s }(encoderSums)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ tokens, hd, heads int }{{197, 64, 3}, {17, 8, 2}, {5, 17, 1}, {3, 2, 2}, {1, 6, 1}, {64, 40, 2}, {41, 72, 1}} {
		width := tc.heads * tc.hd
		vec := func() []float32 {
			v := make([]float32, tc.tokens*width)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 3)
			}
			return v
		}
		q, k, v := vec(), vec(), vec()
		scale := float32(1 / math.Sqrt(float64(tc.hd)))
		for h := 0; h < tc.heads; h++ {
			r := newEncoderRowScratch(tc.tokens, tc.hd, scale)
			r.load(k[h*tc.hd:], v[h*tc.hd:], width)
			for i := 0; i < tc.tokens; i++ {
				qi := q[i*width+h*tc.hd : i*width+(h+1)*tc.hd]
				want := make([]float32, tc.hd)
				encoderRowRef(want, qi, k[h*tc.hd:], v[h*tc.hd:], make([]float32, tc.tokens), width, scale)
				for _, im := range impls {
					encoderSums = im.sums
					got := make([]float32, tc.hd)
					r.row(got, qi)
					for d := range got {
						if math.Float32bits(got[d]) != math.Float32bits(want[d]) {
							t.Fatalf("%s: %d tokens, head dim %d, head %d, token %d, dim %d: %v, want %v", im.name, tc.tokens, tc.hd, h, i, d, got[d], want[d])
						}
					}
				}
			}
		}
	}
}

// BenchmarkEncoderAttention: ViT-B/16's attention (197 tokens, 12 heads of
// 64) for 4 images on one worker, on the path in use and on the Go one.
func BenchmarkEncoderAttention(b *testing.B) {
	const seqs, tokens, heads, hd = 4, 197, 12, 64
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, seqs*tokens*heads*hd)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	q, k, v := vec(), vec(), vec()
	out := make([]float32, len(q))
	defer func(s func(out []float32, coef []uint64, m []float64, stride int, scale uint32)) { encoderSums = s }(encoderSums)
	for _, path := range []string{"in-use", "go"} {
		if path == "go" {
			encoderSums = encoderSumsGo
		}
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				EncoderAttention(1, out, q, k, v, seqs, tokens, heads, hd, 0.125)
			}
		})
	}
}
