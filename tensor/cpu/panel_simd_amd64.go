//go:build goexperiment.simd && amd64

package cpu

import "simd/archsimd"

func init() {
	if cpuAVX512 {
		toPanelBits = toPanelAVX512
	}
}

// The three rounds of an 8×8 transpose by two-source permutes: round 1
// interleaves two rows, round 2 two pairs, round 3 two quadruples; each
// takes half of its output from x (indices 0-7) and half from y (8-15).
// Plain arrays, loaded in the kernel: a vector load at package start-up
// would die on a CPU without AVX.
var transIdx = [6][8]uint32{
	{0, 8, 1, 9, 2, 10, 3, 11}, {4, 12, 5, 13, 6, 14, 7, 15},
	{0, 1, 8, 9, 2, 3, 10, 11}, {4, 5, 12, 13, 6, 7, 14, 15},
	{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15},
}

// toPanelAVX512 is toPanelScalar with each full group of eight columns
// moved as 8×8 blocks transposed in registers; the depths past the last
// whole block and a partial group of columns go to the scalar code.
func toPanelAVX512(dst, rows []uint32, cols, kc, ld int) {
	groups, k8 := min(cols, nr)/8*8, kc/8*8
	for c0 := 0; c0 < groups; c0 += 8 {
		for k := 0; k < k8; k += 8 {
			transpose8(dst[k*nr+c0:], rows[c0*ld+k:], ld)
		}
	}
	archsimd.ClearAVXUpperBits()
	toPanelFrom(dst, rows, cols, kc, ld, groups, k8)
}

// transpose8 writes dst[j·nr + i] = src[i·stride + j] for i, j < 8.
func transpose8(dst, src []uint32, stride int) {
	transLo1, transHi1 := archsimd.LoadUint32x8(&transIdx[0]), archsimd.LoadUint32x8(&transIdx[1])
	transLo2, transHi2 := archsimd.LoadUint32x8(&transIdx[2]), archsimd.LoadUint32x8(&transIdx[3])
	transLo3, transHi3 := archsimd.LoadUint32x8(&transIdx[4]), archsimd.LoadUint32x8(&transIdx[5])
	r0 := archsimd.LoadUint32x8Slice(src)
	r1 := archsimd.LoadUint32x8Slice(src[stride:])
	r2 := archsimd.LoadUint32x8Slice(src[2*stride:])
	r3 := archsimd.LoadUint32x8Slice(src[3*stride:])
	r4 := archsimd.LoadUint32x8Slice(src[4*stride:])
	r5 := archsimd.LoadUint32x8Slice(src[5*stride:])
	r6 := archsimd.LoadUint32x8Slice(src[6*stride:])
	r7 := archsimd.LoadUint32x8Slice(src[7*stride:])
	// Pairs of rows, columns 0-3 and 4-7.
	a0, a1 := r0.ConcatPermute(r1, transLo1), r0.ConcatPermute(r1, transHi1)
	a2, a3 := r2.ConcatPermute(r3, transLo1), r2.ConcatPermute(r3, transHi1)
	a4, a5 := r4.ConcatPermute(r5, transLo1), r4.ConcatPermute(r5, transHi1)
	a6, a7 := r6.ConcatPermute(r7, transLo1), r6.ConcatPermute(r7, transHi1)
	// Quadruples of rows, two columns each: b0 columns 0-1, b1 2-3, b2 4-5, b3 6-7 of rows 0-3; b4-b7 of rows 4-7.
	b0, b1 := a0.ConcatPermute(a2, transLo2), a0.ConcatPermute(a2, transHi2)
	b2, b3 := a1.ConcatPermute(a3, transLo2), a1.ConcatPermute(a3, transHi2)
	b4, b5 := a4.ConcatPermute(a6, transLo2), a4.ConcatPermute(a6, transHi2)
	b6, b7 := a5.ConcatPermute(a7, transLo2), a5.ConcatPermute(a7, transHi2)
	// Whole columns.
	b0.ConcatPermute(b4, transLo3).StoreSlice(dst)
	b0.ConcatPermute(b4, transHi3).StoreSlice(dst[nr:])
	b1.ConcatPermute(b5, transLo3).StoreSlice(dst[2*nr:])
	b1.ConcatPermute(b5, transHi3).StoreSlice(dst[3*nr:])
	b2.ConcatPermute(b6, transLo3).StoreSlice(dst[4*nr:])
	b2.ConcatPermute(b6, transHi3).StoreSlice(dst[5*nr:])
	b3.ConcatPermute(b7, transLo3).StoreSlice(dst[6*nr:])
	b3.ConcatPermute(b7, transHi3).StoreSlice(dst[7*nr:])
}
