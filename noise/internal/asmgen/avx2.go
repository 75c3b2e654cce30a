package main

import "fmt"

// The AVX2 kernels: the AVX-512 kernels' computation (avx512.go) on ymm
// registers in VEX instructions only. A group is 4 blocks in the lane order
// 0 2 1 3; a batch is 2 groups (32 elements), the most 16 registers hold.
// Without opmask registers, masks are vectors (compares, blends), and the
// stores of elements not all in the range are VMASKMOVPS.
// Without broadcast operands, the kernel first writes each Philox key as a
// ymm vector on its stack (R12), for the rounds to read as memory operands.
//
// Registers: group g owns Y6g..Y6g+5 and Y12+g, Y14 is the stores' mask,
// Y15 the counter words 0 of the step's first block. SI, DI, BX and DX as in
// the AVX-512 kernels.

// g2 is a group's registers.
type g2 struct {
	g     int
	v     [6]string
	extra string // the sine and cosine's mask
	lanes string // the blocks of its lanes, from Y15
}

func group2(g int) g2 {
	x := g2{g: g, extra: fmt.Sprintf("Y%d", 12+g), lanes: fmt.Sprintf("P_LANES4(%d)", g)}
	for i := range x.v {
		x.v[i] = fmt.Sprintf("Y%d", 6*g+i)
	}
	return x
}

// key2 is the stack vector of kernelArgs' word i+1 (d0, e1, e2, e3, k02,
// then k0 and k1 of rounds 3..9).
func key2(i int) string { return fmt.Sprintf("%d(R12)", 32*i) }

// philox2 is philox512 with two instructions for each three-way exclusive
// or; the key is xored into word 1 or 3 first, while the product is made.
func philox2(x g2) chain {
	v := x.v
	c := chain{
		op("VPADDD", x.lanes, "Y15", v[5]),
		op("VPMULUDQ", "C_M0", v[5], v[3]),
		op("VPSRLQ", "$32", v[3], v[2]),
		op("VPXOR", key2(0), v[2], v[2]),
		op("VPMULUDQ", "C_M1", v[2], v[1]),
		op("VPSRLQ", "$32", v[1], v[0]),
		op("VPXOR", key2(1), v[0], v[0]),
		op("VPXOR", key2(2), v[3], v[2]),
		op("VPMULUDQ", "C_M0", v[0], v[3]),
		op("VPMULUDQ", "C_M1", v[2], v[4]),
		op("VPXOR", key2(4), v[1], v[1]),
		op("VPSRLQ", "$32", v[4], v[0]),
		op("VPXOR", v[1], v[0], v[0]),
		op("VPSRLQ", "$32", v[3], v[2]),
		op("VPXOR", key2(3), v[2], v[2]),
	}
	c1, c3, t0, t1 := v[4], v[3], v[5], v[1]
	for r := 3; r <= 9; r++ {
		c = append(c,
			op("VPMULUDQ", "C_M0", v[0], t0),
			op("VPMULUDQ", "C_M1", v[2], t1),
			op("VPXOR", key2(5+2*(r-3)), c1, c1),
			op("VPXOR", key2(6+2*(r-3)), c3, c3),
			op("VPSRLQ", "$32", t1, v[0]),
			op("VPXOR", c1, v[0], v[0]),
			op("VPSRLQ", "$32", t0, v[2]),
			op("VPXOR", c3, v[2], v[2]))
		c1, c3, t0, t1 = t1, t0, c3, c1
	}
	return c
}

// load2 reads the group's words from the test's layout at off(AX).
func load2(x g2, off int) chain {
	return chain{
		op("VMOVDQU", fmt.Sprintf("%d(AX)", off), x.v[0]),
		op("VMOVDQU", fmt.Sprintf("%d(AX)", off+32), x.v[1]),
		op("VMOVDQU", fmt.Sprintf("%d(AX)", off+64), x.v[2]),
		op("VMOVDQU", fmt.Sprintf("%d(AX)", off+96), x.v[5]),
	}
}

// log2 is log512: the pairs (v0, v1), then the radius into v5. Where
// m < √½ (the mask, in v0), e gains the mask (−1 as an integer) and m gains
// m & mask.
func log2(x g2) chain {
	v := x.v
	a, e, f, z, p := v[0], v[2], v[3], v[4], v[5]
	c := chain{
		op("VPSLLQ", "$32", v[2], v[3]),
		op("VPBLENDD", "$0xAA", v[3], v[0], v[0]),
		op("VPSLLQ", "$32", v[5], v[4]),
		op("VPBLENDD", "$0xAA", v[4], v[1], v[1]),
		op("VPSRLD", "$8", a, a),
		op("VPADDD", "C_ONEI", a, a),
		op("VCVTDQ2PS", a, a),
		op("VPSRLD", "$23", a, e),
		op("VPSUBD", "C_150", e, e),
		op("VPAND", "C_MANT", a, f),
		op("VPOR", "C_HALFBITS", f, f),
		op("VCMPPS", "$1", "C_SQRTHF", f, a),
		op("VPADDD", a, e, e),
		op("VANDPS", f, a, a),
		op("VADDPS", a, f, f),
		op("VSUBPS", "C_ONEF", f, f),
		op("VCVTDQ2PS", e, e),
	}
	return append(c, logPoly("", f, e, z, p, a)...)
}

// sincos2 is sincos512 with vector masks: the mirror's (then the swap's) in
// the group's extra register; the values end in v4 and v0.
func sincos2(x g2) chain {
	v := x.v
	b, rad, a, z, s, cs, m := v[1], v[5], v[0], v[2], v[3], v[4], x.extra
	c := chain{
		op("VPAND", "C_ANGLE", b, a),
		op("VPCMPGTD", "C_TMIRROR", a, m),
		op("VMOVDQU", "C_2P30", cs),
		op("VPSUBD", a, cs, cs),
		op("VBLENDVPS", m, cs, a, a),
	}
	c = append(c, sinCosPolys("", a, z, s, cs)...)
	return append(c,
		op("VPSLLD", "$1", b, a),
		op("VPXOR", b, a, a),
		op("VPSLLD", "$1", a, m),
		op("VPSRAD", "$31", m, m),
		op("VBLENDVPS", m, s, cs, z),
		op("VBLENDVPS", m, cs, s, s),
		op("VPAND", "C_SIGN", a, a),
		op("VXORPS", a, z, z),
		op("VPAND", "C_SIGN", b, a),
		op("VXORPS", a, s, s),
		op("VMULPS", rad, z, z),
		op("VMULPS", rad, s, s),
		op("VUNPCKLPS", s, z, cs),
		op("VUNPCKHPS", s, z, a))
}

// words2 puts the words in element order, blocks 0-1 in v3, 2-3 in v4.
func words2(x g2) chain {
	v := x.v
	return chain{
		op("VPSLLQ", "$32", v[1], v[3]),
		op("VPBLENDD", "$0xAA", v[3], v[0], v[0]),
		op("VPSLLQ", "$32", v[5], v[4]),
		op("VPBLENDD", "$0xAA", v[4], v[2], v[2]),
		op("VPUNPCKLQDQ", v[2], v[0], v[3]),
		op("VPUNPCKHQDQ", v[2], v[0], v[4]),
	}
}

// rademacher2 is rademacher512.
func rademacher2(x g2) chain {
	c := words2(x)
	for _, o := range []string{x.v[3], x.v[4]} {
		c = append(c, op("VPSLLD", "$31", o, o), op("VPXOR", "C_RADE", o, o))
	}
	return c
}

// ternary2 is ternary512 with signed compares of values with the sign bit
// flipped: −1, its sign flipped (+1) where p > 0x55555555, and 0 where
// p > 0xAAAAAAAA.
func ternary2(x g2) chain {
	c := words2(x)
	v := x.v
	for _, r := range [][3]string{{v[3], v[0], v[1]}, {v[4], v[2], v[5]}} { // the value and two temporaries
		o, t0, t1 := r[0], r[1], r[2]
		c = append(c,
			op("VPMULLD", "C_INV3", o, o),
			op("VPXOR", "C_SIGN", o, o),
			op("VPCMPGTD", "C_T55B", o, t0),
			op("VPCMPGTD", "C_TAAB", o, t1),
			op("VPAND", "C_SIGN", t0, t0),
			op("VPXOR", "C_RADE", t0, t0),
			op("VPANDN", t0, t1, o))
	}
	return c
}

// dist2 is dist512's counterpart.
type dist2 struct {
	name   string
	phases []func(g2) chain
	out    func(g2) [2]string
}

var (
	wordsOut2    = func(x g2) [2]string { return [2]string{x.v[3], x.v[4]} }
	normalDist2  = dist2{"normals", []func(g2) chain{log2, sincos2}, func(x g2) [2]string { return [2]string{x.v[4], x.v[0]} }}
	radeDist2    = dist2{"rademacher", []func(g2) chain{rademacher2}, wordsOut2}
	ternaryDist2 = dist2{"ternary", []func(g2) chain{ternary2}, wordsOut2}
	bitsDist2    = dist2{"bits", []func(g2) chain{words2}, wordsOut2}
)

// step2 writes one step of n groups; its first store keeps only the
// elements from skip (DX's mask), all stores of a storeLeft step only the
// elements left. Masked stores are VMASKMOVPS with a vector mask, slow on
// some CPUs, so a full step checks DX and stores plainly when it can.
func step2(f *file, d dist2, n int, st store512, words bool, id string) {
	xs := make([]g2, n)
	for g := range xs {
		xs[g] = group2(g)
	}
	cs := make([]chain, n)
	for g, x := range xs {
		if words {
			cs[g] = load2(x, 128*g)
		} else {
			cs[g] = philox2(x)
		}
		for _, p := range d.phases {
			cs[g] = append(cs[g], p(x)...)
		}
	}
	f.ins(stagger(lag2, cs...)...)
	for g, x := range xs {
		o := d.out(x)
		if st == storeLeft {
			maskLeft(f, 16*g, 16, g == 0)
			maskStore2(f, o, 64*g)
			continue
		}
		if g == 0 {
			plain := "plain" + id
			f.ins("CMPL DX, $0xFFFF", "JEQ "+plain, "MOVL DX, R9")
			maskStore2(f, o, 0)
			f.ins("JMP stored" + id)
			f.label(plain)
		}
		f.ins(op("VMOVUPS", o[0], fmt.Sprintf("%d(DI)", 64*g)), op("VMOVUPS", o[1], fmt.Sprintf("%d(DI)", 64*g+32)))
		if g == 0 {
			f.label("stored" + id)
		}
	}
	f.ins("MOVL $0xFFFF, DX")
}

// maskStore2 stores the 16 values of o at off(DI), those whose bits are set
// in R9.
func maskStore2(f *file, o [2]string, off int) {
	for h := range o {
		if h == 1 {
			f.ins("SHRL $8, R9")
		}
		f.ins("VMOVD R9, X14", "VPBROADCASTD X14, Y14", "VPAND P_BITS8, Y14, Y14", "VPCMPEQD P_BITS8, Y14, Y14",
			op("VMASKMOVPS", o[h], "Y14", fmt.Sprintf("%d(DI)", off+32*h)))
	}
}

// lag2 is lag512's counterpart (the same measurements).
const lag2 = 0.125

// keyVectors2 writes the kernel arguments' key schedule as ymm vectors on
// the kernel's stack frame (32·19 bytes, aligned to 32 from R12) and the
// first block's counter word into Y15, then aligns the loop that follows.
func keyVectors2(f *file) {
	f.ins("LEAQ 31(SP), R12", "ANDQ $-32, R12")
	for i := range 19 {
		f.ins(op("VPBROADCASTD", fmt.Sprintf("%d(SI)", 4*(i+1)), "Y0"), op("VMOVDQA", "Y0", key2(i)))
	}
	f.ins("VPBROADCASTD A_CTR, Y15", "PCALIGN $64")
}

// kernel2 writes a distribution's kernel: batches of 2 groups while 32
// elements or more are left, then one masked step of 2 or 1 groups.
func kernel2(f *file, d dist2) {
	name := d.name + "AVX2"
	dst := "*float32"
	if d.name == "bits" {
		dst = "*uint32"
	}
	f.text(fmt.Sprintf("func %s(dst %s, skip, n int, a *kernelArgs)", name, dst), name, 32*19+32, 32)
	f.ins(
		"MOVQ dst+0(FP), DI",
		"MOVQ skip+8(FP), CX",
		"MOVQ n+16(FP), BX",
		"MOVQ a+24(FP), SI",
		"MOVQ CX, AX",
		"SHLQ $2, AX",
		"SUBQ AX, DI",
		"ADDQ CX, BX",
		"MOVL $0xFFFF, DX",
		"SHLL CX, DX",
		"ANDL $0xFFFF, DX")
	keyVectors2(f)
	f.label("batch")
	f.ins("CMPQ BX, $32", "JLT last")
	step2(f, d, 2, storeAll, false, "B")
	f.ins("ADDQ $128, DI", "SUBQ $32, BX", "VPADDD C_EIGHT, Y15, Y15", "JMP batch")
	f.label("last")
	f.ins("CMPQ BX, $17", "JLT last1")
	step2(f, d, 2, storeLeft, false, "L2")
	f.ins("JMP done")
	f.label("last1")
	f.ins("TESTQ BX, BX", "JLE done")
	step2(f, d, 1, storeLeft, false, "L1")
	f.label("done")
	f.ins("VZEROUPPER", "RET")
}

// wordsKernel2 is wordsKernel512's counterpart: steps of 2 groups.
func wordsKernel2(f *file, d dist2) {
	name := d.name + "WordsAVX2"
	f.text(fmt.Sprintf("func %s(dst *float32, words *uint64, groups int)", name), name, 0, 24)
	f.ins("MOVQ dst+0(FP), DI", "MOVQ words+8(FP), AX", "MOVQ groups+16(FP), CX", "SHRQ $1, CX", "MOVL $0xFFFF, DX")
	f.label("step")
	step2(f, d, 2, storeAll, true, "W")
	f.ins("ADDQ $256, AX", "ADDQ $128, DI", "DECQ CX", "JNZ step", "VZEROUPPER", "RET")
}

// panelOut2 turns two groups' normals into a panel's layout: rows 0-3 of
// 8 (group 0: rows 0, 1 in its v4, rows 2, 3 in its v0, a row's 4
// elements in order in each 128-bit lane) and rows 4-7 (group 1) become
// four vectors, depth 0 to 3 of the 8 rows in order, in v1, v2, v3, v5 of
// group 0. A transpose of 8×4 in three rounds: 128-bit lanes paired
// (rows 0|4, 1|5, 2|6, 3|7), then pairs of values, then pairs of pairs.
func panelOut2(a, b g2) chain {
	r04, r15, r26, r37 := a.v[1], a.v[2], a.v[3], a.v[5]
	t0, t1, t2, t3 := b.v[1], b.v[2], b.v[3], b.v[5]
	return chain{
		op("VPERM2F128", "$0x20", b.v[4], a.v[4], r04),
		op("VPERM2F128", "$0x31", b.v[4], a.v[4], r15),
		op("VPERM2F128", "$0x20", b.v[0], a.v[0], r26),
		op("VPERM2F128", "$0x31", b.v[0], a.v[0], r37),
		op("VUNPCKLPS", r15, r04, t0), // depths 0, 1 of rows 0, 1 (4, 5)
		op("VUNPCKHPS", r15, r04, t1), // depths 2, 3 of rows 0, 1
		op("VUNPCKLPS", r37, r26, t2), // depths 0, 1 of rows 2, 3
		op("VUNPCKHPS", r37, r26, t3),
		op("VUNPCKLPD", t2, t0, r04), // depth 0 of rows 0-3 (4-7)
		op("VUNPCKHPD", t2, t0, r15),
		op("VUNPCKLPD", t3, t1, r26),
		op("VUNPCKHPD", t3, t1, r37),
	}
}

// panelKernel2 writes normalsPanelAVX2, normalsPanelAVX512's counterpart
// (panel.go): the normals of 32 rows, n blocks of each, in a GEMM panel's
// layout. Row r's blocks start at the counter A_CTR plus its lane's offset
// in rows (R13: group g of 4 rows, 8 dwords at 32·g, quadword lanes in the
// order of P_LANES4) and advance by one a step. A step is 4 pairs of
// groups (8 rows each) of one block a row: 512 bytes of dst, at depths
// 4i..4i+3; a pair's 32 values are 4 vectors of 8 rows, one a depth.
func panelKernel2(f *file) {
	name := "normalsPanelAVX2"
	f.text(fmt.Sprintf("func %s(dst *float32, rows *[64]uint32, n int, a *kernelArgs)", name), name, 32*19+32, 32)
	f.ins(
		"MOVQ dst+0(FP), DI",
		"MOVQ rows+8(FP), R13",
		"MOVQ n+16(FP), BX",
		"MOVQ a+24(FP), SI")
	keyVectors2(f)
	f.label("step")
	f.ins("TESTQ BX, BX", "JZ done")
	for pair := range 4 {
		xs := [2]g2{group2(0), group2(1)}
		cs := make([]chain, 2)
		for h := range xs {
			xs[h].lanes = fmt.Sprintf("%d(R13)", 32*(2*pair+h))
			cs[h] = append(philox2(xs[h]), log2(xs[h])...)
			cs[h] = append(cs[h], sincos2(xs[h])...)
		}
		f.ins(stagger(lag2, cs...)...)
		f.ins(panelOut2(xs[0], xs[1])...)
		for d, o := range []string{xs[0].v[1], xs[0].v[2], xs[0].v[3], xs[0].v[5]} {
			f.ins(op("VMOVUPS", o, fmt.Sprintf("%d(DI)", 128*d+32*pair)))
		}
	}
	f.ins("ADDQ $512, DI", "VPADDD C_ONEI, Y15, Y15", "DECQ BX", "JMP step")
	f.label("done")
	f.ins("VZEROUPPER", "RET")
}

func avx2() []byte {
	var f file
	f.line("%s", header)
	for _, d := range []dist2{normalDist2, radeDist2, ternaryDist2, bitsDist2} {
		kernel2(&f, d)
	}
	panelKernel2(&f)
	for _, d := range []dist2{normalDist2, ternaryDist2} {
		wordsKernel2(&f, d)
	}
	return f.b.Bytes()
}
