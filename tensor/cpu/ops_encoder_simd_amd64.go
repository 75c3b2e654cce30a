//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// The AVX-512 version of the encoder attention's sums (ops_encoder.go):
// eight float64 lanes, each lane one score (or one output element) summed in
// the contract's order, products of float32 values exact in float64 and
// added with a separate Add (no fused multiply-add, which could not change
// an exact product's sum anyway): the same bits as encoderSumsGo. Several
// lane groups run side by side, so that the chains' latency is hidden.

func init() {
	if cpuAVX512 {
		encoderSums = encoderSumsAVX512
	}
}

// bcast64 is the float64 whose bits are b on 8 lanes.
func bcast64(b uint64) archsimd.Float64x8 { return archsimd.BroadcastUint64x8(b).AsFloat64x8() }

// encoderSumsAVX512 is encoderSums 32 outputs at a time, then 8.
func encoderSumsAVX512(out []float32, coef []uint64, m []float32, stride int, scale uint32) {
	sc := archsimd.BroadcastUint32x8(scale).AsFloat32x8()
	c := 0
	for ; c+32 <= len(out); c += 32 {
		var a0, a1, a2, a3 archsimd.Float64x8
		for i, x := range coef {
			xi, row := bcast64(x), m[i*stride+c:i*stride+c+32]
			a0 = a0.Add(xi.Mul(archsimd.LoadFloat32x8Slice(row).ConvertToFloat64()))
			a1 = a1.Add(xi.Mul(archsimd.LoadFloat32x8Slice(row[8:]).ConvertToFloat64()))
			a2 = a2.Add(xi.Mul(archsimd.LoadFloat32x8Slice(row[16:]).ConvertToFloat64()))
			a3 = a3.Add(xi.Mul(archsimd.LoadFloat32x8Slice(row[24:]).ConvertToFloat64()))
		}
		a0.ConvertToFloat32().Mul(sc).StoreSlice(out[c:])
		a1.ConvertToFloat32().Mul(sc).StoreSlice(out[c+8:])
		a2.ConvertToFloat32().Mul(sc).StoreSlice(out[c+16:])
		a3.ConvertToFloat32().Mul(sc).StoreSlice(out[c+24:])
	}
	for ; c+8 <= len(out); c += 8 {
		var a archsimd.Float64x8
		for i, x := range coef {
			a = a.Add(bcast64(x).Mul(archsimd.LoadFloat32x8Slice(m[i*stride+c : i*stride+c+8]).ConvertToFloat64()))
		}
		a.ConvertToFloat32().Mul(sc).StoreSlice(out[c:])
	}
	archsimd.ClearAVXUpperBits()
	encoderSumsTail(out, coef, m, stride, scale, c)
}
