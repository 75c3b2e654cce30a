package jpeg

// islow is libjpeg's default inverse DCT ("JDCT_ISLOW", jidctint.c), the
// one Pillow decodes with: the Loeffler–Ligtenberg–Moschytz 1-D transform
// (12 multiplications, 32 additions) on the columns and then on the rows,
// in fixed point with 13-bit constants, the first pass's outputs kept with
// 2 extra bits. Integer sums do not depend on their order, so the formula
// alone fixes the bits; libjpeg's shortcuts for blocks without AC terms give
// the same numbers as the full formula and are left out.
//
// The output is range-limited as libjpeg's post-IDCT table does: the value
// v, centred on 0, becomes v+128 for −128 ≤ v ≤ 127 and is clamped beyond,
// except that libjpeg indexes its table with v & 1023, so values beyond
// ±512 (only corrupt data makes them) wrap as they do in libjpeg.

// A block is an 8×8 block of coefficients (image/jpeg's type).
type block [blockSize]int32

const blockSize = 8 * 8

const (
	constBits = 13
	pass1Bits = 2
)

// The constants are round(c · 2¹³) of the transform's rotations.
const (
	fix0_298631336 = 2446
	fix0_390180644 = 3196
	fix0_541196100 = 4433
	fix0_765366865 = 6270
	fix0_899976223 = 7373
	fix1_175875602 = 9633
	fix1_501321110 = 12299
	fix1_847759065 = 15137
	fix1_961570560 = 16069
	fix2_053119869 = 16819
	fix2_562915447 = 20995
	fix3_072711026 = 25172
)

// rangeLimit maps v & 1023 of an IDCT output v to a sample: libjpeg's
// post-IDCT range-limit table (jdmaster.c, prepare_range_limit_table).
var rangeLimit = func() (t [1024]uint8) {
	for i := range t {
		switch {
		case i < 128:
			t[i] = uint8(i + 128)
		case i < 512:
			t[i] = 255
		case i < 896:
			t[i] = 0
		default:
			t[i] = uint8(i - 896)
		}
	}
	return t
}()

// descale divides x by 2ⁿ, rounding halves up (libjpeg's DESCALE).
func descale(x int64, n uint) int64 { return (x + 1<<(n-1)) >> n }

// idct8 is the 1-D transform of v (natural order), scaled by 2¹³·√8.
func idct8(v *[8]int64) [8]int64 {
	// Even part: the rotation of v2 and v6 by √2·c6.
	z1 := (v[2] + v[6]) * fix0_541196100
	t2 := z1 - v[6]*fix1_847759065
	t3 := z1 + v[2]*fix0_765366865
	t0 := (v[0] + v[4]) << constBits
	t1 := (v[0] - v[4]) << constBits
	e0, e3 := t0+t3, t0-t3
	e1, e2 := t1+t2, t1-t2
	// Odd part.
	o0, o1, o2, o3 := v[7], v[5], v[3], v[1]
	z5 := (o0 + o2 + o1 + o3) * fix1_175875602
	zA := -(o0 + o3) * fix0_899976223
	zB := -(o1 + o2) * fix2_562915447
	zC := -(o0+o2)*fix1_961570560 + z5
	zD := -(o1+o3)*fix0_390180644 + z5
	o0 = o0*fix0_298631336 + zA + zC
	o1 = o1*fix2_053119869 + zB + zD
	o2 = o2*fix3_072711026 + zB + zC
	o3 = o3*fix1_501321110 + zA + zD
	return [8]int64{e0 + o3, e1 + o2, e2 + o1, e3 + o0, e3 - o0, e2 - o1, e1 - o2, e0 - o3}
}

// islow dequantizes block b (natural order) by qt (zig-zag order),
// transforms it and writes its 8×8 samples to dst (rows stride apart).
func islow(b *block, qt *block, dst []byte, stride int) {
	var ws [blockSize]int32 // the columns' outputs, row-major
	var v [8]int64
	for zig, u := range unzig {
		// b is consumed here: dequantise in place, as image/jpeg did.
		b[u] *= qt[zig]
	}
	for x := 0; x < 8; x++ {
		for y := range v {
			v[y] = int64(b[8*y+x])
		}
		for y, o := range idct8(&v) {
			ws[8*y+x] = int32(descale(o, constBits-pass1Bits))
		}
	}
	for y := 0; y < 8; y++ {
		for x := range v {
			v[x] = int64(ws[8*y+x])
		}
		row := dst[y*stride : y*stride+8]
		for x, o := range idct8(&v) {
			row[x] = rangeLimit[descale(o, constBits+pass1Bits+3)&1023]
		}
	}
}
