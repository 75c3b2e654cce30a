//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// simdPaths lists the SIMD kernels the CPU supports, fastest first.
func simdPaths() []*gemmPath {
	var ps []*gemmPath
	if cpuAVX512 {
		ps = append(ps, &gemmPath{name: "avx512", kern: kernAVX512asm, kern16: kernAVX512BF16asm,
			tall: []tallKernel{{12, kernAVX512x12, kernAVX512x12BF16}, {8, kernAVX512x8, kernAVX512x8BF16}}})
	}
	if cpuAVX2 {
		ps = append(ps, &gemmPath{name: "avx2", kern: kernAVX2asm, kern16: kernAVX2BF16asm,
			tall: []tallKernel{{6, kernAVX2x6, kernAVX2x6BF16}}})
	}
	return ps
}

// rowPtrs returns pointers to the four A rows of a tile; rows past the valid
// ones alias the last valid row.
func rowPtrs(a *float32, lda, rows int) (p0, p1, p2, p3 unsafe.Pointer) {
	p0 = unsafe.Pointer(a)
	step := uintptr(lda) * 4
	p1 = unsafe.Add(p0, uintptr(min(1, rows-1))*step)
	p2 = unsafe.Add(p0, uintptr(min(2, rows-1))*step)
	p3 = unsafe.Add(p0, uintptr(min(3, rows-1))*step)
	return
}

func bcast16(p unsafe.Pointer, off uintptr) archsimd.Float32x16 {
	return archsimd.BroadcastFloat32x16(*(*float32)(unsafe.Add(p, off)))
}

func load16(p unsafe.Pointer, off uintptr) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, off)))
}

func store16(v archsimd.Float32x16, p unsafe.Pointer, off uintptr) {
	v.Store((*[16]float32)(unsafe.Add(p, off)))
}

// kernAVX512asm is kernAVX512 in assembly (gemm_kern_avx512_amd64.s).
//
//go:noescape
func kernAVX512asm(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)

// kernAVX512BF16asm is kernAVX512BF16 in assembly (same file).
//
//go:noescape
func kernAVX512BF16asm(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)

// kernAVX512x12 and kernAVX512x8 are the 12×32 and 8×32 tiles of
// kernAVX512asm (gemm_kern_avx512_tall_amd64.s): every element the same bits,
// all rows valid.
//
//go:noescape
func kernAVX512x12(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)

//go:noescape
func kernAVX512x8(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)

// kernAVX512x12BF16 and kernAVX512x8BF16 are the tall tiles of
// kernAVX512BF16 (bfloat16 panels), in the same assembly file.
//
//go:noescape
func kernAVX512x12BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)

//go:noescape
func kernAVX512x8BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)

// kernAVX512 keeps the 4×32 tile in 8 zmm accumulators: per k, two panel
// loads, four broadcasts, eight FMAs. (Go's register allocator uses about 15
// vector registers, so a 6×32 tile would spill.) The GEMM runs its assembly
// transcription, kernAVX512asm, which is 0-10 % faster on the model shapes
// (docs/PERFORMANCE.md) because it broadcasts straight from memory, keeps
// each accumulator in one register and unrolls k; this Go version is the
// readable reference it is tested against, bit for bit.
func kernAVX512(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool) {
	p0, p1, p2, p3 := rowPtrs(a, lda, rows)
	pb := unsafe.Pointer(b)
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	end := uintptr(kc) * 4
	for off, bo := uintptr(0), uintptr(0); off < end; off += 4 {
		b0 := load16(pb, bo)
		b1 := load16(pb, bo+64)
		x := bcast16(p0, off)
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = bcast16(p1, off)
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = bcast16(p2, off)
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = bcast16(p3, off)
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		bo += nr * 4 // pointer arithmetic stays inside the panel (checkptr)
	}
	pc := unsafe.Pointer(c)
	l := uintptr(ldc) * 4
	if acc {
		c00 = c00.Add(load16(pc, 0))
		c01 = c01.Add(load16(pc, 64))
		c10 = c10.Add(load16(pc, l))
		c11 = c11.Add(load16(pc, l+64))
		c20 = c20.Add(load16(pc, 2*l))
		c21 = c21.Add(load16(pc, 2*l+64))
		c30 = c30.Add(load16(pc, 3*l))
		c31 = c31.Add(load16(pc, 3*l+64))
	}
	store16(c00, pc, 0)
	store16(c01, pc, 64)
	store16(c10, pc, l)
	store16(c11, pc, l+64)
	store16(c20, pc, 2*l)
	store16(c21, pc, 2*l+64)
	store16(c30, pc, 3*l)
	store16(c31, pc, 3*l+64)
}

func bcast8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.BroadcastFloat32x8(*(*float32)(unsafe.Add(p, off)))
}

func load8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, off)))
}

func store8(v archsimd.Float32x8, p unsafe.Pointer, off uintptr) {
	v.Store((*[8]float32)(unsafe.Add(p, off)))
}

// kernAVX2x6 is the 6×32 tile of kernAVX2asm (gemm_kern_avx2_tall_amd64.s):
// every element the same bits, all rows valid.
//
//go:noescape
func kernAVX2x6(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)

// kernAVX2x6BF16 is kernAVX2x6 over bfloat16 panels (same file).
//
//go:noescape
func kernAVX2x6BF16(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool)

// kernAVX2asm is kernAVX2 in assembly (gemm_kern_avx2_amd64.s).
//
//go:noescape
func kernAVX2asm(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)

// kernAVX2BF16asm is kernAVX2BF16 in assembly (same file).
//
//go:noescape
func kernAVX2BF16asm(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)

// kernAVX2 computes the 4×32 tile as two 4×16 halves, each in 8 ymm
// accumulators (AVX2 has 16 vector registers). The GEMM runs its assembly
// transcription, kernAVX2asm (broadcasts from memory, k unrolled four
// times); this Go version is the reference it is tested against, bit for bit.
func kernAVX2(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool) {
	kernAVX2Half(a, lda, rows, b, c, ldc, kc, acc)
	kernAVX2Half(a, lda, rows, (*float32)(unsafe.Add(unsafe.Pointer(b), 64)),
		(*float32)(unsafe.Add(unsafe.Pointer(c), 64)), ldc, kc, acc)
}

// kernAVX2Half computes 4 rows × 16 columns; b and c point at the half's
// first column, panel rows still nr floats apart.
func kernAVX2Half(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool) {
	p0, p1, p2, p3 := rowPtrs(a, lda, rows)
	pb := unsafe.Pointer(b)
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	end := uintptr(kc) * 4
	for off, bo := uintptr(0), uintptr(0); off < end; off += 4 {
		b0 := load8(pb, bo)
		b1 := load8(pb, bo+32)
		x := bcast8(p0, off)
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = bcast8(p1, off)
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = bcast8(p2, off)
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = bcast8(p3, off)
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		bo += nr * 4 // pointer arithmetic stays inside the panel (checkptr)
	}
	pc := unsafe.Pointer(c)
	l := uintptr(ldc) * 4
	if acc {
		c00 = c00.Add(load8(pc, 0))
		c01 = c01.Add(load8(pc, 32))
		c10 = c10.Add(load8(pc, l))
		c11 = c11.Add(load8(pc, l+32))
		c20 = c20.Add(load8(pc, 2*l))
		c21 = c21.Add(load8(pc, 2*l+32))
		c30 = c30.Add(load8(pc, 3*l))
		c31 = c31.Add(load8(pc, 3*l+32))
	}
	store8(c00, pc, 0)
	store8(c01, pc, 32)
	store8(c10, pc, l)
	store8(c11, pc, l+32)
	store8(c20, pc, 2*l)
	store8(c21, pc, 2*l+32)
	store8(c30, pc, 3*l)
	store8(c31, pc, 3*l+32)
}

// loadBF16x16 widens 16 bfloat16 values to float32 (zero-extend, shift left 16).
func loadBF16x16(p unsafe.Pointer, off uintptr) archsimd.Float32x16 {
	return archsimd.LoadUint16x16((*[16]uint16)(unsafe.Add(p, off))).ExtendToUint32().ShiftAllLeft(16).AsFloat32x16()
}

// kernAVX512BF16 is kernAVX512 reading a bfloat16 panel; the GEMM runs its
// assembly transcription, kernAVX512BF16asm, which also prefetches the panel.
func kernAVX512BF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool) {
	p0, p1, p2, p3 := rowPtrs(a, lda, rows)
	pb := unsafe.Pointer(b)
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x16
	end := uintptr(kc) * 4
	for off, bo := uintptr(0), uintptr(0); off < end; off += 4 {
		b0 := loadBF16x16(pb, bo)
		b1 := loadBF16x16(pb, bo+32)
		x := bcast16(p0, off)
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = bcast16(p1, off)
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = bcast16(p2, off)
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = bcast16(p3, off)
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		bo += nr * 2
	}
	pc := unsafe.Pointer(c)
	l := uintptr(ldc) * 4
	if acc {
		c00 = c00.Add(load16(pc, 0))
		c01 = c01.Add(load16(pc, 64))
		c10 = c10.Add(load16(pc, l))
		c11 = c11.Add(load16(pc, l+64))
		c20 = c20.Add(load16(pc, 2*l))
		c21 = c21.Add(load16(pc, 2*l+64))
		c30 = c30.Add(load16(pc, 3*l))
		c31 = c31.Add(load16(pc, 3*l+64))
	}
	store16(c00, pc, 0)
	store16(c01, pc, 64)
	store16(c10, pc, l)
	store16(c11, pc, l+64)
	store16(c20, pc, 2*l)
	store16(c21, pc, 2*l+64)
	store16(c30, pc, 3*l)
	store16(c31, pc, 3*l+64)
}

// loadBF16x8 widens 8 bfloat16 values to float32.
func loadBF16x8(p unsafe.Pointer, off uintptr) archsimd.Float32x8 {
	return archsimd.LoadUint16x8((*[8]uint16)(unsafe.Add(p, off))).ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
}

// kernAVX2BF16 is kernAVX2 reading a bfloat16 panel; the GEMM runs its
// assembly transcription, kernAVX2BF16asm, which also prefetches the panel.
func kernAVX2BF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool) {
	kernAVX2HalfBF16(a, lda, rows, b, c, ldc, kc, acc)
	kernAVX2HalfBF16(a, lda, rows, (*uint16)(unsafe.Add(unsafe.Pointer(b), 32)),
		(*float32)(unsafe.Add(unsafe.Pointer(c), 64)), ldc, kc, acc)
}

func kernAVX2HalfBF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool) {
	p0, p1, p2, p3 := rowPtrs(a, lda, rows)
	pb := unsafe.Pointer(b)
	var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
	end := uintptr(kc) * 4
	for off, bo := uintptr(0), uintptr(0); off < end; off += 4 {
		b0 := loadBF16x8(pb, bo)
		b1 := loadBF16x8(pb, bo+16)
		x := bcast8(p0, off)
		c00 = x.MulAdd(b0, c00)
		c01 = x.MulAdd(b1, c01)
		x = bcast8(p1, off)
		c10 = x.MulAdd(b0, c10)
		c11 = x.MulAdd(b1, c11)
		x = bcast8(p2, off)
		c20 = x.MulAdd(b0, c20)
		c21 = x.MulAdd(b1, c21)
		x = bcast8(p3, off)
		c30 = x.MulAdd(b0, c30)
		c31 = x.MulAdd(b1, c31)
		bo += nr * 2
	}
	pc := unsafe.Pointer(c)
	l := uintptr(ldc) * 4
	if acc {
		c00 = c00.Add(load8(pc, 0))
		c01 = c01.Add(load8(pc, 32))
		c10 = c10.Add(load8(pc, l))
		c11 = c11.Add(load8(pc, l+32))
		c20 = c20.Add(load8(pc, 2*l))
		c21 = c21.Add(load8(pc, 2*l+32))
		c30 = c30.Add(load8(pc, 3*l))
		c31 = c31.Add(load8(pc, 3*l+32))
	}
	store8(c00, pc, 0)
	store8(c01, pc, 32)
	store8(c10, pc, l)
	store8(c11, pc, l+32)
	store8(c20, pc, 2*l)
	store8(c21, pc, 2*l+32)
	store8(c30, pc, 3*l)
	store8(c31, pc, 3*l+32)
}
