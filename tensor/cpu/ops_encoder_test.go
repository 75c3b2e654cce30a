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
	type sumsFunc = func(out []float32, coef []uint64, m []float64, stride int, scale uint32)
	type sums2Func = func(out0, out1 []float32, coef0, coef1 []uint64, m []float64, stride int, scale uint32)
	type impl struct {
		name  string
		sums  sumsFunc
		sums2 sums2Func
	}
	impls := []impl{{"go", encoderSumsGo, encoderSums2Go}, {"in use", encoderSums, encoderSums2}}
	defer func(s sumsFunc, s2 sums2Func) { encoderSums, encoderSums2 = s, s2 }(encoderSums, encoderSums2)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ tokens, hd, heads int }{{197, 64, 3}, {17, 8, 2}, {5, 17, 1}, {3, 2, 2}, {1, 6, 1}, {64, 40, 2}, {41, 72, 1}, {9, 128, 1}, {70, 65, 1}} {
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
			qOf := func(i int) []float32 { return q[i*width+h*tc.hd : i*width+(h+1)*tc.hd] }
			want := make([][]float32, tc.tokens)
			for i := range want {
				want[i] = make([]float32, tc.hd)
				encoderRowRef(want[i], qOf(i), k[h*tc.hd:], v[h*tc.hd:], make([]float32, tc.tokens), width, scale)
			}
			check := func(name string, i int, got []float32) {
				t.Helper()
				for d := range got {
					if math.Float32bits(got[d]) != math.Float32bits(want[i][d]) {
						t.Fatalf("%s: %d tokens, head dim %d, head %d, token %d, dim %d: %v, want %v", name, tc.tokens, tc.hd, h, i, d, got[d], want[i][d])
					}
				}
			}
			for _, im := range impls {
				encoderSums, encoderSums2 = im.sums, im.sums2
				for i := 0; i < tc.tokens; i++ {
					got := make([]float32, tc.hd)
					r.row(got, qOf(i))
					check(im.name+" row", i, got)
					// Two queries at once: the next token's, and the same one twice.
					j := (i + 1) % tc.tokens
					got0, got1 := make([]float32, tc.hd), make([]float32, tc.hd)
					r.pair(got0, qOf(i), got1, qOf(j))
					check(im.name+" pair", i, got0)
					check(im.name+" pair", j, got1)
					r.pair(got0, qOf(i), got1, qOf(i))
					check(im.name+" pair of one query", i, got0)
					check(im.name+" pair of one query", i, got1)
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

// TestEncoderRowSpecialValues: with infinities, NaNs, zeros of both signs,
// subnormals and values whose scores overflow, in a few of the inputs or
// many, every path (the sums and the normalisation, Go and in use) gives
// the one-at-a-time bits, on and off the lane groups' multiples; a NaN may
// differ from the reference's in its payload (which NaN an operation
// passes on depends on its operand order), not in being a NaN.
func TestEncoderRowSpecialValues(t *testing.T) {
	type sumsFunc = func(out []float32, coef []uint64, m []float64, stride int, scale uint32)
	type sums2Func = func(out0, out1 []float32, coef0, coef1 []uint64, m []float64, stride int, scale uint32)
	type normFunc = func(p []float32, p64 []uint64, sum float64)
	defer func(s sumsFunc, s2 sums2Func, n normFunc) {
		encoderSums, encoderSums2, encoderNormalize = s, s2, n
	}(encoderSums, encoderSums2, encoderNormalize)
	sums2InUse := encoderSums2
	specials := []float32{float32(math.NaN()), math.Float32frombits(0xffc00456), float32(math.Inf(1)), float32(math.Inf(-1)),
		0, float32(math.Copysign(0, -1)), 3e38, -3e38, 1e-45, 1e20}
	sizes := []int{1, 2, 7, 8, 9, 17, 63, 64, 65, 72, 129}
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 600 {
		tokens, hd := sizes[rng.IntN(len(sizes))], sizes[rng.IntN(len(sizes))]
		share := []float64{0, 0.002, 0.05}[trial%3]
		vec := func() []float32 {
			v := make([]float32, tokens*hd)
			for i := range v {
				if v[i] = float32(rng.NormFloat64() * 3); rng.Float64() < share {
					v[i] = specials[rng.IntN(len(specials))]
				}
			}
			return v
		}
		q, k, v := vec(), vec(), vec()
		scale := []float32{float32(1 / math.Sqrt(float64(hd))), 0, float32(math.Inf(1))}[rng.IntN(3)]
		i, j := rng.IntN(tokens), rng.IntN(tokens)
		want, wantJ := make([]float32, hd), make([]float32, hd)
		encoderRowRef(want, q[i*hd:(i+1)*hd], k, v, make([]float32, tokens), hd, scale)
		encoderRowRef(wantJ, q[j*hd:(j+1)*hd], k, v, make([]float32, tokens), hd, scale)
		r := newEncoderRowScratch(tokens, hd, scale)
		r.load(k, v, hd)
		check := func(what string, got, want []float32) {
			t.Helper()
			for d := range got {
				if math.Float32bits(got[d]) != math.Float32bits(want[d]) && !(got[d] != got[d] && want[d] != want[d]) {
					t.Fatalf("trial %d, %s: %d tokens, head dim %d, scale %v, dim %d: %v, want %v", trial, what, tokens, hd, scale, d, got[d], want[d])
				}
			}
		}
		for _, sums := range []struct {
			one sumsFunc
			two sums2Func
		}{{encoderSumsGo, encoderSums2Go}, {encoderSums, sums2InUse}} {
			for _, norm := range []normFunc{encoderNormalizeGo, encoderNormalize} {
				encoderSums, encoderSums2, encoderNormalize = sums.one, sums.two, norm
				got, gotJ := make([]float32, hd), make([]float32, hd)
				r.row(got, q[i*hd:(i+1)*hd])
				check("row", got, want)
				r.pair(got, q[i*hd:(i+1)*hd], gotJ, q[j*hd:(j+1)*hd])
				check("pair", got, want)
				check("pair's second", gotJ, wantJ)
			}
		}
	}
}
