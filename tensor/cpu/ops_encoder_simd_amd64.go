//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

// AVX-512 versions of the encoder attention's two sums (ops_encoder.go):
// eight float64 lanes, each lane one score (or one output element) summed in
// the contract's order, products of float32 values exact in float64 and
// added with a separate Add (no fused multiply-add, which could not change
// an exact product's sum anyway): the same bits as encoderScoresGo and
// encoderMixGo. Several lane groups run side by side, so that the chains'
// latency is hidden.

func init() {
	if cpuAVX512 {
		encoderScores = encoderScoresAVX512
		encoderMix = encoderMixAVX512
	}
}

// bcast64 is the float64 whose bits are b on 8 lanes.
func bcast64(b uint64) archsimd.Float64x8 { return archsimd.BroadcastUint64x8(b).AsFloat64x8() }

// encoderScoresAVX512 is encoderScores 32 tokens at a time, then 8.
func encoderScoresAVX512(p []float32, q64 []uint64, kt []float32, scale uint32) {
	n := len(p)
	sc := archsimd.BroadcastUint32x8(scale).AsFloat32x8()
	j := 0
	for ; j+32 <= n; j += 32 {
		var a0, a1, a2, a3 archsimd.Float64x8
		for d, x := range q64 {
			xd, row := bcast64(x), kt[d*n+j:d*n+j+32]
			a0 = a0.Add(xd.Mul(archsimd.LoadFloat32x8Slice(row).ConvertToFloat64()))
			a1 = a1.Add(xd.Mul(archsimd.LoadFloat32x8Slice(row[8:]).ConvertToFloat64()))
			a2 = a2.Add(xd.Mul(archsimd.LoadFloat32x8Slice(row[16:]).ConvertToFloat64()))
			a3 = a3.Add(xd.Mul(archsimd.LoadFloat32x8Slice(row[24:]).ConvertToFloat64()))
		}
		a0.ConvertToFloat32().Mul(sc).StoreSlice(p[j:])
		a1.ConvertToFloat32().Mul(sc).StoreSlice(p[j+8:])
		a2.ConvertToFloat32().Mul(sc).StoreSlice(p[j+16:])
		a3.ConvertToFloat32().Mul(sc).StoreSlice(p[j+24:])
	}
	for ; j+8 <= n; j += 8 {
		var a archsimd.Float64x8
		for d, x := range q64 {
			a = a.Add(bcast64(x).Mul(archsimd.LoadFloat32x8Slice(kt[d*n+j : d*n+j+8]).ConvertToFloat64()))
		}
		a.ConvertToFloat32().Mul(sc).StoreSlice(p[j:])
	}
	archsimd.ClearAVXUpperBits()
	encoderScoresTail(p, q64, kt, scale, j)
}

// encoderMixAVX512 is encoderMix 32 output elements at a time, then 8.
func encoderMixAVX512(o []float32, p64 []uint64, v []float32, width int) {
	hd := len(o)
	d := 0
	for ; d+32 <= hd; d += 32 {
		var a0, a1, a2, a3 archsimd.Float64x8
		for j, pj := range p64 {
			pd, row := bcast64(pj), v[j*width+d:j*width+d+32]
			a0 = a0.Add(pd.Mul(archsimd.LoadFloat32x8Slice(row).ConvertToFloat64()))
			a1 = a1.Add(pd.Mul(archsimd.LoadFloat32x8Slice(row[8:]).ConvertToFloat64()))
			a2 = a2.Add(pd.Mul(archsimd.LoadFloat32x8Slice(row[16:]).ConvertToFloat64()))
			a3 = a3.Add(pd.Mul(archsimd.LoadFloat32x8Slice(row[24:]).ConvertToFloat64()))
		}
		a0.ConvertToFloat32().StoreSlice(o[d:])
		a1.ConvertToFloat32().StoreSlice(o[d+8:])
		a2.ConvertToFloat32().StoreSlice(o[d+16:])
		a3.ConvertToFloat32().StoreSlice(o[d+24:])
	}
	for ; d+8 <= hd; d += 8 {
		var a archsimd.Float64x8
		for j, pj := range p64 {
			a = a.Add(bcast64(pj).Mul(archsimd.LoadFloat32x8Slice(v[j*width+d : j*width+d+8]).ConvertToFloat64()))
		}
		a.ConvertToFloat32().StoreSlice(o[d:])
	}
	archsimd.ClearAVXUpperBits()
	encoderMixTail(o, p64, v, width, d)
}
