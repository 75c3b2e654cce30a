package cpu

import "unsafe"

// kernPortable is the pure-Go micro kernel (any GOARCH, any build): the 4×32
// tile is computed as eight 4×4 register blocks, each element accumulated in
// a scalar in k order, each product rounded before it is added (the
// compiler would fuse them with GOAMD64=v3, and the portable path would
// round otherwise than a v1 build reporting the same arithmetic:
// TestScalarKernelsUnfused).
func kernPortable(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool) {
	// Rows past the valid ones re-read the last valid row; their results
	// land in tile rows the caller ignores.
	r1, r2, r3 := min(1, rows-1), min(2, rows-1), min(3, rows-1)
	as := unsafe.Slice(a, r3*lda+kc)
	a0 := as[:kc]
	a1 := as[r1*lda : r1*lda+kc]
	a2 := as[r2*lda : r2*lda+kc]
	a3 := as[r3*lda : r3*lda+kc]
	bs := unsafe.Slice(b, kc*nr)
	cs := unsafe.Slice(c, 3*ldc+nr)
	c0, c1, c2, c3 := cs[:nr], cs[ldc:ldc+nr], cs[2*ldc:2*ldc+nr], cs[3*ldc:3*ldc+nr]
	for j := 0; j < nr; j += 4 {
		var s00, s01, s02, s03, s10, s11, s12, s13 float32
		var s20, s21, s22, s23, s30, s31, s32, s33 float32
		bj := bs[j:]
		for k := range a0 {
			bk := bj[k*nr : k*nr+4 : k*nr+4]
			b0, b1, b2, b3 := bk[0], bk[1], bk[2], bk[3]
			x := a0[k]
			s00 += float32(x * b0)
			s01 += float32(x * b1)
			s02 += float32(x * b2)
			s03 += float32(x * b3)
			x = a1[k]
			s10 += float32(x * b0)
			s11 += float32(x * b1)
			s12 += float32(x * b2)
			s13 += float32(x * b3)
			x = a2[k]
			s20 += float32(x * b0)
			s21 += float32(x * b1)
			s22 += float32(x * b2)
			s23 += float32(x * b3)
			x = a3[k]
			s30 += float32(x * b0)
			s31 += float32(x * b1)
			s32 += float32(x * b2)
			s33 += float32(x * b3)
		}
		if acc {
			s00, s01, s02, s03 = s00+c0[j], s01+c0[j+1], s02+c0[j+2], s03+c0[j+3]
			s10, s11, s12, s13 = s10+c1[j], s11+c1[j+1], s12+c1[j+2], s13+c1[j+3]
			s20, s21, s22, s23 = s20+c2[j], s21+c2[j+1], s22+c2[j+2], s23+c2[j+3]
			s30, s31, s32, s33 = s30+c3[j], s31+c3[j+1], s32+c3[j+2], s33+c3[j+3]
		}
		c0[j], c0[j+1], c0[j+2], c0[j+3] = s00, s01, s02, s03
		c1[j], c1[j+1], c1[j+2], c1[j+3] = s10, s11, s12, s13
		c2[j], c2[j+1], c2[j+2], c2[j+3] = s20, s21, s22, s23
		c3[j], c3[j+1], c3[j+2], c3[j+3] = s30, s31, s32, s33
	}
}
