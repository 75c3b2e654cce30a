package main

import "fmt"

// The AVX-512 kernels (vecKernels in vector.go says what they compute).
//
// A group is 8 blocks, one in each quadword lane of a zmm register per
// Philox word: VPMULUDQ multiplies the low dwords of the lanes into full
// 64-bit products, so a lane's high dword holds junk that no instruction
// reads. The blocks sit in the lanes in the order 0 4 1 5 2 6 3 7 (in a ymm
// half step, 4 blocks: 0 2 1 3), so that 128-bit lane q holds blocks q and
// q+4: the unpack instructions, which work within 128-bit lanes, then put
// out blocks 0-3 in one register and 4-7 in the other, in element order.
//
// A kernel runs batches of 5 groups (160 elements) while it can, then one
// masked step of 5 to 1 groups or a half step (16 elements),
// whichever is the smallest that holds the rest: a short range costs one
// step. Five groups are what the 32 registers hold: more chains in flight
// than four, which measured about 7 % slower.
//
// Registers: group g owns Z6g..Z6g+5 and the mask K(g+1); Z30 holds the
// pair indices, Z31 2³⁰ (a quadrant, in angle bits); K7 is the stores'
// mask. Philox's multipliers are broadcast memory operands. SI points at
// the kernel arguments, DI at the step's element 0 in dst, BX counts the
// elements left from DI, R11 is the step's first block's counter word, DX
// the mask of the elements from skip.

// g512 is a group's registers in one width: 'Z' for 8 blocks, 'Y' for 4.
type g512 struct {
	g     int // the group's index in its step
	w     byte
	v     [6]string
	k     string // the group's mask register
	idx   string // the pair indices
	lanes string // the blocks of its lanes, from R11
}

func group512(w byte, g int) g512 {
	x := g512{g: g, w: w, k: fmt.Sprintf("K%d", g+1), idx: string(w) + "30", lanes: fmt.Sprintf("P_LANES8(%d)", g)}
	for i := range x.v {
		x.v[i] = fmt.Sprintf("%c%d", w, 6*g+i)
	}
	if w == 'Y' { // the half step, always a kernel's last: its own indices in Y30
		x.lanes = "P_LANES4(0)"
	}
	return x
}

// philox512 is Philox4x32-10 of the group's blocks, x0..x3 ending in v0,
// v1, v2, v5. Rounds 0 and 1 multiply once each (kernelArgs says why); the
// state moves between registers from round to round instead of being
// copied. 0x96 is the three-way exclusive or.
func philox512(x g512) chain {
	v, m0, m1 := x.v, "C_M0", "C_M1"
	c := chain{
		op("VPBROADCASTD", "R11", v[5]),
		op("VPADDD", x.lanes, v[5], v[5]),
		op("VPMULUDQ.BCST", m0, v[5], v[3]),
		op("VPSRLQ", "$32", v[3], v[2]),
		op("VPXORD.BCST", "A_D0", v[2], v[2]),
		op("VPMULUDQ.BCST", m1, v[2], v[1]),
		op("VPSRLQ", "$32", v[1], v[0]),
		op("VPXORD.BCST", "A_E1", v[0], v[0]),
		op("VPXORD.BCST", "A_E2", v[3], v[2]),
		op("VPMULUDQ.BCST", m0, v[0], v[3]),
		op("VPMULUDQ.BCST", m1, v[2], v[4]),
		op("VPSRLQ", "$32", v[4], v[0]),
		op("VPTERNLOGD.BCST", "$0x96", "A_K02", v[1], v[0]),
		op("VPSRLQ", "$32", v[3], v[2]),
		op("VPXORD.BCST", "A_E3", v[2], v[2]),
	}
	// Words 0 and 2 stay in v0 and v2; the products go to t0 and t1, which
	// are words 3 and 1 afterwards.
	c1, c3, t0, t1 := v[4], v[3], v[5], v[1]
	for r := 3; r <= 9; r++ {
		c = append(c,
			op("VPMULUDQ.BCST", m0, v[0], t0),
			op("VPMULUDQ.BCST", m1, v[2], t1),
			op("VPSRLQ", "$32", t1, v[0]),
			op("VPTERNLOGD.BCST", "$0x96", fmt.Sprintf("A_KEY0(%d)", r), c1, v[0]),
			op("VPSRLQ", "$32", t0, v[2]),
			op("VPTERNLOGD.BCST", "$0x96", fmt.Sprintf("A_KEY1(%d)", r), c3, v[2]))
		c1, c3, t0, t1 = t1, t0, c3, c1
	}
	return c
}

// load512 reads the words of the group's blocks from the test's layout
// (vecKernels.words) at off(AX) instead of computing them.
func load512(x g512, off int) chain {
	size := 64
	if x.w == 'Y' {
		size = 32
	}
	return chain{
		op("VMOVDQU64", fmt.Sprintf("%d(AX)", off), x.v[0]),
		op("VMOVDQU64", fmt.Sprintf("%d(AX)", off+size), x.v[1]),
		op("VMOVDQU64", fmt.Sprintf("%d(AX)", off+2*size), x.v[2]),
		op("VMOVDQU64", fmt.Sprintf("%d(AX)", off+3*size), x.v[5]),
	}
}

// log512 is the radius √(−2·ln u) of the pairs' first words (after the
// two VPERMT2Ds, v0 holds (x0, x2) of each block, v1 (x1, x3)), into v5.
// With t = a>>8 + 1 and u = t·2⁻²⁴, u's exponent e (v2, VGETEXPPS's of t
// less 23) and mantissa m (v3, t's mantissa bits under ½'s exponent) are
// had from t, so u itself is never formed. Where m < √½ (the mask), m
// becomes m + m and e becomes e − 1; f = m − 1 (v3), z = f² (v4), then
// logf's polynomial p (v5) in Horner's order. 0xEA is
// (dst & src2) | src3.
func log512(x g512) chain {
	v := x.v
	a, e, f, z, p, k := v[0], v[2], v[3], v[4], v[5], x.k
	c := chain{
		op("VPERMT2D", v[2], x.idx, v[0]),
		op("VPERMT2D", v[5], x.idx, v[1]),
		op("VPSRLD", "$8", a, a),
		op("VPADDD.BCST", "C_ONEI", a, a),
		op("VCVTDQ2PS", a, a),
		op("VGETEXPPS", a, e),
		op("VADDPS.BCST", "C_M23", e, e),
		op("VPBROADCASTD", "C_MANT", f),
		op("VPTERNLOGD.BCST", "$0xEA", "C_HALFBITS", a, f),
		op("VCMPPS.BCST", "$1", "C_SQRTHF", f, k),
		op("VADDPS", f, f, k, f),
		op("VSUBPS.BCST", "C_ONEF", e, k, e),
		op("VSUBPS.BCST", "C_ONEF", f, f),
	}
	return append(c, logPoly(".BCST", f, e, z, p, a)...)
}

// sincos512 finishes the normals: sin θ and cos θ of the angle words (v1)
// times the radius (v5), in element order in v0 and v3. The angle within
// the quadrant is the word's bits 6-29, taken in place (f·2⁶, v0), mirrored
// to (2²⁴ − f)·2⁶ when t ≥ ½ (bit 29); a = f·2⁶·(π/2·2⁻³⁰) (v0) is
// normal.go's f·2⁻²⁴·π/2, the same real number rounded once. z = a² (v2),
// sinPoly (v3), cosPoly (v4); the sine after the swap goes where z was.
// With w = word ^ word<<1, sine and cosine swap
// when the mirror or the quadrant's oddness but not both say so (bit 30 of
// w), the sine is negated in quadrants 2 and 3 (bit 31 of the word) and
// the cosine in 1 and 2 (bit 31 of w). 0x78 is dst ^ (src2 & src3).
func sincos512(x g512) chain {
	v := x.v
	b, rad, a, z, s, cs, k := v[1], v[5], v[0], v[2], v[3], v[4], x.k
	so := z
	c := chain{
		op("VPANDD.BCST", "C_ANGLE", b, a),
		op("VPTESTMD.BCST", "C_BIT29", b, k),
		op("VPSUBD", a, string(x.w)+"31", k, a),
	}
	c = append(c, sinCosPolys(".BCST", a, z, s, cs)...)
	return append(c,
		op("VPSLLD", "$1", b, a),
		op("VPXORD", b, a, a),
		op("VPTESTMD.BCST", "C_BIT30", a, k),
		op("VBLENDMPS", cs, s, k, so),
		op("VMOVAPS", s, k, cs),
		op("VPTERNLOGD.BCST", "$0x78", "C_SIGN", b, so),
		op("VPTERNLOGD.BCST", "$0x78", "C_SIGN", a, cs),
		op("VMULPS", rad, cs, cs),
		op("VMULPS", rad, so, so),
		op("VUNPCKLPS", so, cs, a),
		op("VUNPCKHPS", so, cs, s))
}

// words512 puts the group's words in element order, blocks 0-3 (or 0-1) in
// v3 and the rest in v4.
func words512(x g512) chain {
	v := x.v
	return chain{
		op("VPERMT2D", v[1], x.idx, v[0]),
		op("VPERMT2D", v[5], x.idx, v[2]),
		op("VPUNPCKLQDQ", v[2], v[0], v[3]),
		op("VPUNPCKHQDQ", v[2], v[0], v[4]),
	}
}

// rademacher512: +1 for an odd word, −1 for an even one: the word's bit 0
// moved to the sign bit and flipped, on 1's bits.
func rademacher512(x g512) chain {
	c := words512(x)
	for _, o := range []string{x.v[3], x.v[4]} {
		c = append(c, op("VPSLLD", "$31", o, o), op("VPXORD.BCST", "C_RADE", o, o))
	}
	return c
}

// ternary512: (x mod 3) − 1, into v1 and v5. With p = x·3⁻¹ mod 2³²
// (3⁻¹ = 0xAAAAAAAB), x = 3q + r gives p = q + r·3⁻¹ mod 2³², so
// p ≤ 0x55555555 when r = 0, 0x55555556 ≤ p ≤ 0xAAAAAAAA when r = 2 and
// p ≥ 0xAAAAAAAB when r = 1: −1, then +1 where p > 0x55555555, then 0
// where p > 0xAAAAAAAA.
func ternary512(x g512) chain {
	c := words512(x)
	for i, o := range []string{x.v[3], x.v[4]} {
		t := []string{x.v[1], x.v[5]}[i]
		c = append(c,
			op("VPMULLD.BCST", "C_INV3", o, o),
			op("VBROADCASTSS", "C_MONEF", t),
			op("VPCMPUD.BCST", "$6", "C_T55", o, x.k),
			op("VBROADCASTSS", "C_ONEF", x.k, t),
			op("VPCMPUD.BCST", "$6", "C_TAA", o, x.k),
			op("VPXORD", t, t, x.k, t))
	}
	return c
}

// dist512 is one distribution's transform: the chains after Philox's, in
// order, and the registers holding the values.
type dist512 struct {
	name   string // of the Go function
	phases []func(g512) chain
	out    func(g512) [2]string
}

var (
	wordsOut512    = func(x g512) [2]string { return [2]string{x.v[3], x.v[4]} }
	normalDist512  = dist512{"normals", []func(g512) chain{log512, sincos512}, func(x g512) [2]string { return [2]string{x.v[0], x.v[3]} }}
	radeDist512    = dist512{"rademacher", []func(g512) chain{rademacher512}, wordsOut512}
	ternaryDist512 = dist512{"ternary", []func(g512) chain{ternary512}, func(x g512) [2]string { return [2]string{x.v[1], x.v[5]} }}
	bitsDist512    = dist512{"bits", []func(g512) chain{words512}, wordsOut512}
)

// store512 says how a step stores: all its elements (storeAll), or those
// left (storeLeft, BX counts them). Either way the first store keeps only
// the elements from skip (DX's mask), for the range may start inside a
// block; DX is all ones after a step.
type store512 int

const (
	storeAll store512 = iota
	storeLeft
)

// lag512 is how far apart the groups of a step run, in chain lengths (see
// stagger). Measured: 1/8 a little faster than 0, ¼ and more slower.
const lag512 = 0.125

// step512 writes one step of n groups of width w: Philox (or the test's
// words), the transform, the stores.
func step512(f *file, d dist512, w byte, n int, st store512, words bool) {
	xs := make([]g512, n)
	for g := range xs {
		xs[g] = group512(w, g)
	}
	if w == 'Y' {
		f.ins(op("VMOVDQU32", "P_PERM8", "Y30"))
	}
	// Each group's whole chain, Philox (or the test's words) to the values,
	// then the groups staggered.
	cs := make([]chain, n)
	for g, x := range xs {
		if words {
			cs[g] = load512(x, 256*g)
		} else {
			cs[g] = philox512(x)
		}
		for _, p := range d.phases {
			cs[g] = append(cs[g], p(x)...)
		}
	}
	f.ins(stagger(lag512, cs...)...)
	per := 16 // elements a store
	if w == 'Y' {
		per = 8
	}
	for g, x := range xs {
		for h, o := range d.out(x) {
			j := 2*g + h
			addr := fmt.Sprintf("%d(DI)", 4*per*j)
			switch {
			case st == storeLeft:
				maskLeft(f, per*j, per, j < 16/per)
			case j == 0:
				f.ins("MOVL DX, R9")
			default:
				f.ins(op("VMOVUPS", o, addr))
				continue
			}
			f.ins(op("KMOVW", "R9", "K7"), op("VMOVUPS", o, "K7", addr))
		}
	}
	f.ins("MOVL $0xFFFF, DX")
}

// maskLeft sets R9 to the mask of the per elements from element first of
// the step that are left (BX counts them from element 0), and with head,
// that are also in DX's mask of the elements from skip.
func maskLeft(f *file, first, per int, head bool) {
	f.ins(
		op("LEAQ", fmt.Sprintf("-%d(BX)", first), "CX"),
		op("MOVL", fmt.Sprintf("$%d", per), "R8"),
		op("CMPQ", "CX", "R8"),
		op("CMOVQGT", "R8", "CX"),
		op("XORL", "R8", "R8"),
		op("CMPQ", "CX", "R8"),
		op("CMOVQLT", "R8", "CX"),
		op("MOVL", "$1", "R9"),
		op("SHLL", "CX", "R9"),
		op("DECL", "R9"))
	if head {
		f.ins(op("MOVL", "DX", "R8"), op("SHRL", fmt.Sprintf("$%d", first), "R8"), op("ANDL", "R8", "R9"))
	}
}

// kernel512 writes a distribution's kernel: batches of 5 groups while 160
// elements or more are left, then one masked step just large enough for
// the rest (half: 16 elements, 1 group: 32, 2: 64, 3: 96, 4: 128, 5: 160).
func kernel512(f *file, d dist512) {
	name := d.name + "AVX512"
	dst := "*float32"
	if d.name == "bits" {
		dst = "*uint32"
	}
	f.text(fmt.Sprintf("func %s(dst %s, skip, n int, a *kernelArgs)", name, dst), name, 0, 32)
	f.ins(
		"MOVQ dst+0(FP), DI",
		"MOVQ skip+8(FP), CX",
		"MOVQ n+16(FP), BX",
		"MOVQ a+24(FP), SI",
		"MOVQ CX, AX",
		"SHLQ $2, AX",
		"SUBQ AX, DI", // DI: element 0 of the first block
		"ADDQ CX, BX",
		"MOVL $0xFFFF, DX",
		"SHLL CX, DX",
		"ANDL $0xFFFF, DX",
		"MOVL A_CTR, R11",
		"VMOVDQU32 P_PERM16, Z30",
		"VPBROADCASTD C_2P30, Z31",
		"PCALIGN $64")
	f.label("batch")
	f.ins("CMPQ BX, $160", "JLT last")
	step512(f, d, 'Z', 5, storeAll, false)
	f.ins("ADDQ $640, DI", "SUBQ $160, BX", "ADDL $40, R11", "JMP batch")
	f.label("last")
	for _, s := range []struct {
		w          byte
		groups, at int // the step's groups, and the fewest elements it is for
	}{{'Z', 5, 129}, {'Z', 4, 97}, {'Z', 3, 65}, {'Z', 2, 33}, {'Z', 1, 17}, {'Y', 1, 1}} {
		next := fmt.Sprintf("last%d%c", s.groups, s.w)
		f.ins(fmt.Sprintf("CMPQ BX, $%d", s.at), "JLT "+next)
		step512(f, d, s.w, s.groups, storeLeft, false)
		f.ins("JMP done")
		f.label(next)
	}
	f.label("done")
	vzeroupper512(f)
}

// vzeroupper512 returns from an AVX-512 kernel: with the upper halves of
// every vector register zero, zmm16-31 included (VZEROUPPER clears only
// 0-15), so that no dirty upper state is left to the Go code.
func vzeroupper512(f *file) {
	for r := 16; r < 32; r++ {
		f.ins(fmt.Sprintf("VPXORD X%d, X%d, X%d", r, r, r))
	}
	f.ins("VZEROUPPER", "RET")
}

// wordsKernel512 is the tests' entry (vecKernels.words): steps of 4 groups
// on given words, groups/4 of them.
func wordsKernel512(f *file, d dist512) {
	name := d.name + "WordsAVX512"
	f.text(fmt.Sprintf("func %s(dst *float32, words *uint64, groups int)", name), name, 0, 24)
	f.ins(
		"MOVQ dst+0(FP), DI",
		"MOVQ words+8(FP), AX",
		"MOVQ groups+16(FP), CX",
		"SHRQ $2, CX",
		"MOVL $0xFFFF, DX",
		"VMOVDQU32 P_PERM16, Z30",
		"VPBROADCASTD C_2P30, Z31")
	f.label("step")
	step512(f, d, 'Z', 4, storeAll, true)
	f.ins("ADDQ $1024, AX", "ADDQ $512, DI", "DECQ CX", "JNZ step")
	vzeroupper512(f)
}

// panelOut512 turns the group's normals (rows 0-3 of its 8 in v0, rows 4-7
// in v3, each row's 4 elements in order) into a panel's layout: v1 holds
// element 0 of the 8 rows then element 1, v2 elements 2 and 3 (Z24 and
// Z25 hold the indices: P_PANEL).
func panelOut512(x g512) chain {
	v := x.v
	return chain{
		op("VMOVDQA32", "Z24", v[1]),
		op("VPERMI2PS", v[3], v[0], v[1]),
		op("VMOVDQA32", "Z25", v[2]),
		op("VPERMI2PS", v[3], v[0], v[2]),
	}
}

// panelKernel512 writes normalsPanelAVX512: the normals of 32 rows of a
// weight, n blocks (4 elements) of each, in a GEMM panel's layout (32
// values a depth k, the rows in order), for the panel's noise to need no
// transpose. Row r's blocks start at the counter A_CTR plus its lane's
// offset in rows (group g of 8 rows: 16 dwords at 64·g, quadword lanes in
// the order of P_LANES8), and advance by one a step. A step is 4 groups
// (the 32 rows) of one block each: 512 bytes of dst, at depths 4i..4i+3.
func panelKernel512(f *file) {
	name := "normalsPanelAVX512"
	f.text(fmt.Sprintf("func %s(dst *float32, rows *[64]uint32, n int, a *kernelArgs)", name), name, 0, 32)
	f.ins(
		"MOVQ dst+0(FP), DI",
		"MOVQ rows+8(FP), R12",
		"MOVQ n+16(FP), BX",
		"MOVQ a+24(FP), SI",
		"MOVL A_CTR, R11",
		"VMOVDQU32 P_PERM16, Z30",
		"VPBROADCASTD C_2P30, Z31",
		"VMOVDQU32 P_PANEL(0), Z24",
		"VMOVDQU32 P_PANEL(1), Z25",
		"PCALIGN $64")
	f.label("step")
	f.ins("TESTQ BX, BX", "JZ done")
	xs := make([]g512, 4)
	cs := make([]chain, len(xs))
	for g := range xs {
		xs[g] = group512('Z', g)
		xs[g].lanes = fmt.Sprintf("%d(R12)", 64*g)
		cs[g] = philox512(xs[g])
		for _, p := range []func(g512) chain{log512, sincos512, panelOut512} {
			cs[g] = append(cs[g], p(xs[g])...)
		}
	}
	f.ins(stagger(lag512, cs...)...)
	for g, x := range xs {
		for h, o := range []string{x.v[1], x.v[2]} {
			y := "Y" + o[1:]
			f.ins(
				op("VMOVUPS", y, fmt.Sprintf("%d(DI)", 256*h+32*g)),
				op("VEXTRACTF64X4", "$1", o, y),
				op("VMOVUPS", y, fmt.Sprintf("%d(DI)", 256*h+128+32*g)))
		}
	}
	f.ins("ADDQ $512, DI", "INCL R11", "DECQ BX", "JMP step")
	f.label("done")
	vzeroupper512(f)
}

func avx512() []byte {
	var f file
	f.line("%s", header)
	for _, d := range []dist512{normalDist512, radeDist512, ternaryDist512, bitsDist512} {
		kernel512(&f, d)
	}
	panelKernel512(&f)
	for _, d := range []dist512{normalDist512, ternaryDist512} {
		wordsKernel512(&f, d)
	}
	return f.b.Bytes()
}
