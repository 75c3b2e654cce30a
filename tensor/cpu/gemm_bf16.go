package cpu

import (
	"fmt"
	"math"
	"unsafe"
)

// PackBF16 is Pack with the panels stored as bfloat16: half the memory and
// half the bandwidth of the weight stream, widened to float32 exactly in the
// kernel. Values are rounded to the nearest bfloat16 (ties to even), so it is
// exact for weights that come from a bf16 checkpoint. MatMulPacked and Row
// accept the result like any Packed.
func PackBF16(w []float32, n, k int) *Packed {
	if n < 0 || k < 0 || len(w) != n*k {
		panic(fmt.Sprintf("cpu.PackBF16: len(w)=%d, want n*k=%d*%d", len(w), n, k))
	}
	d := make([]uint16, panels(n)*k*nr)
	for p := range panels(n) {
		panel := d[p*k*nr : (p+1)*k*nr]
		for j := range min(nr, n-p*nr) {
			for kk, v := range w[(p*nr+j)*k : (p*nr+j+1)*k] {
				panel[kk*nr+j] = f32ToBF16(v)
			}
		}
	}
	return &Packed{N: n, K: k, data16: d}
}

// f32ToBF16 rounds to the nearest bfloat16, ties to even; NaN stays NaN.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// kernPortableBF16 widens the kc×32 panel slice to float32 on the stack and
// runs the float32 kernel on it (same k order, so the same bits as Pack of
// the rounded weights).
func kernPortableBF16(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool) {
	var wide [kcBlock * nr]float32
	for i, h := range unsafe.Slice(b, kc*nr) {
		wide[i] = bf16ToF32(h)
	}
	kernPortable(a, lda, rows, &wide[0], c, ldc, kc, acc)
}
