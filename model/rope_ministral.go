package model

import "math"

// yarnInvFreq returns transformers 5's YaRN inverse frequencies
// (modeling_rope_utils._compute_yarn_parameters) in its float32 arithmetic:
// pos_freqs = θ^(2i/d); extrapolation 1/pos_freqs, interpolation
// 1/(factor·pos_freqs); the correction range [low, high] of dimensions
// (float64, floored and ceiled unless truncate is false) gives a ramp
// clamp((i−low)/(high−low), 0, 1) over i < d/2, and
// inv = interp·(1−e) + extrap·e with e = 1 − ramp.
func yarnInvFreq(d int, theta float32, y *Yarn) []float32 {
	dim, base := float64(d), float64(theta)
	correction := func(rotations float64) float64 {
		return dim * math.Log(y.Original/(rotations*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := correction(y.BetaFast), correction(y.BetaSlow)
	if !y.NoTruncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, dim-1)
	if low == high {
		high += 0.001 // HF's guard against a zero-width ramp
	}
	lo32, span32 := float32(low), float32(high)-float32(low)
	factor := float32(y.Factor)
	inv := make([]float32, d/2)
	for i := range inv {
		exp := float32(2*i) / float32(d)
		pos := float32(math.Pow(float64(theta), float64(exp)))
		extrap := 1 / pos
		interp := 1 / (factor * pos)
		ramp := min(max((float32(i)-lo32)/span32, 0), 1)
		e := 1 - ramp
		inv[i] = float32(interp*(1-e)) + float32(extrap*e)
	}
	return inv
}

// ropeScale is the factor cos and sin are multiplied by: YaRN's attention
// factor, else 1.
func (m *Model) ropeScale() float32 {
	if m.Yarn != nil {
		return float32(m.Yarn.AttentionFactor)
	}
	return 1
}

// llama4Scale is Ministral-3's query scale at cache slot s
// (modeling_ministral3._get_llama_4_attn_scale, in float32):
// 1 + β·ln(1 + ⌊s/original⌋), exactly 1 below original_max_position_embeddings.
func llama4Scale(beta, original float64, slot int) float32 {
	q := float32(math.Floor(float64(float32(slot) / float32(original))))
	return 1 + float32(beta)*float32(math.Log(float64(1+q)))
}

// llama4Table returns the queries' RoPE table of a Ministral-3 model, cos and
// sin times each row's llama-4 scale (rows of tn tokens, the first at cache
// slot start), or nil when every scale is 1 (any slot below
// original_max_position_embeddings, or another model). HF multiplies the
// rotated query by the scale; folding it into the table rounds once more
// per element, a relative 6e-8 at slots where the scale is not 1.
func (m *Model) llama4Table(t *ropeTable, start, tn int) *ropeTable {
	if m.Llama4Beta == 0 || tn <= 0 {
		return nil
	}
	scales := make([]float32, tn)
	any := false
	for i := range scales {
		scales[i] = llama4Scale(m.Llama4Beta, m.Llama4Original, start+i)
		any = any || scales[i] != 1
	}
	if !any {
		return nil
	}
	q := &ropeTable{half: t.half, rows: t.rows, cos: make([]float32, len(t.cos)), sin: make([]float32, len(t.sin))}
	for r := 0; r < t.rows; r++ {
		s := scales[r%tn]
		for i := 0; i < t.half; i++ {
			q.cos[r*t.half+i] = t.cos[r*t.half+i] * s
			q.sin[r*t.half+i] = t.sin[r*t.half+i] * s
		}
	}
	return q
}
