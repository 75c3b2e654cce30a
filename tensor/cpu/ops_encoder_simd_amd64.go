//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"simd/archsimd"
)

// The AVX-512 version of the encoder attention's sums (ops_encoder.go):
// eight float64 lanes, each lane one score (or one output element) summed in
// the contract's order, the operands float32 values widened beforehand so
// that each product is exact and a fused multiply-add rounds the sum as a
// separate add would: the same bits as encoderSumsGo. Eight lane groups run
// side by side, so that the chains' latency is hidden.

func init() {
	if cpuAVX512 {
		encoderSums, encoderSums2, encoderNormalize = encoderSumsAVX512, encoderSums2AVX512, encoderNormalizeAVX512
	}
}

// bcast64 is the float64 whose bits are b on 8 lanes.
func bcast64(b uint64) archsimd.Float64x8 { return archsimd.BroadcastUint64x8(b).AsFloat64x8() }

// encoderDots64 sets out[0:64] to the float32 roundings of the float64
// sums Σ_i coef[i]·m[i·stride + c] over the n coefficients, in order, each
// times scale in float32 (ops_encoder_avx512_amd64.s).
//
//go:noescape
func encoderDots64(out *float32, coef *uint64, n int, m *float64, stride int, scale uint32)

// encoderDots64x2 is encoderDots64 for two coefficient vectors over the
// same m (ops_encoder_avx512_amd64.s): each value of m is loaded once for
// both sums.
//
//go:noescape
func encoderDots64x2(out0, out1 *float32, coef0, coef1 *uint64, n int, m *float64, stride int, scale uint32)

// encoderSumsAVX512 is encoderSums 64 outputs at a time (in assembly), then
// 8.
func encoderSumsAVX512(out []float32, coef []uint64, m []float64, stride int, scale uint32) {
	c := 0
	for ; len(coef) > 0 && c+64 <= len(out); c += 64 {
		_ = m[(len(coef)-1)*stride+c+63] // the last element the kernel reads
		encoderDots64(&out[c], &coef[0], len(coef), &m[c], stride, scale)
	}
	encoderSumsFromAVX512(out, coef, m, stride, scale, c)
}

// encoderSums2AVX512 is encoderSums2: both sums 64 outputs at a time (in
// assembly), then each alone.
func encoderSums2AVX512(out0, out1 []float32, coef0, coef1 []uint64, m []float64, stride int, scale uint32) {
	n := len(coef0)
	if len(coef1) != n || len(out1) != len(out0) { // the kernel reads coef1 and writes out1 as far as coef0 and out0
		panic("encoderSums2: the two queries' coefficients or outputs differ in length")
	}
	c := 0
	for ; n > 0 && c+64 <= len(out0); c += 64 {
		_ = m[(n-1)*stride+c+63] // the last element the kernel reads
		encoderDots64x2(&out0[c], &out1[c], &coef0[0], &coef1[0], n, &m[c], stride, scale)
	}
	encoderSumsFromAVX512(out0, coef0, m, stride, scale, c)
	encoderSumsFromAVX512(out1, coef1, m, stride, scale, c)
}

// encoderSumsFromAVX512 is encoderSums for the outputs from c on: 8 at a time,
// then one at a time.
func encoderSumsFromAVX512(out []float32, coef []uint64, m []float64, stride int, scale uint32, c int) {
	sc := archsimd.BroadcastUint32x8(scale).AsFloat32x8()
	for ; c+8 <= len(out); c += 8 {
		var a archsimd.Float64x8
		for i, x := range coef {
			a = bcast64(x).MulAdd(archsimd.LoadFloat64x8Slice(m[i*stride+c:i*stride+c+8]), a)
		}
		a.ConvertToFloat32().Mul(sc).StoreSlice(out[c:])
	}
	archsimd.ClearAVXUpperBits()
	encoderSumsTail(out, coef, m, stride, scale, c)
}

// encoderNormalizeAVX512 is encoderNormalize eight probabilities at a time.
func encoderNormalizeAVX512(p []float32, p64 []uint64, sum float64) {
	j := encoderNormalizeVec(p, p64, math.Float64bits(sum))
	encoderNormalizeGo(p[j:], p64[j:len(p)], sum)
}

// encoderNormalizeVec does encoderNormalizeAVX512's whole vectors (see
// expSubVec) and returns how many it did.
//
//go:noinline
func encoderNormalizeVec(p []float32, p64 []uint64, sumBits uint64) int {
	s := bcast64(sumBits)
	j := 0
	for ; j+8 <= len(p); j += 8 {
		q := archsimd.LoadFloat32x8Slice(p[j:]).ConvertToFloat64().Div(s).ConvertToFloat32()
		q.StoreSlice(p[j:])
		q.ConvertToFloat64().AsUint64x8().StoreSlice(p64[j:])
	}
	archsimd.ClearAVXUpperBits()
	return j
}
