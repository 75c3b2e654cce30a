package update_test

import (
	"fmt"

	"github.com/meazo-go/meazo/update"
)

// ZO-Adam's first step on three coordinates. The bias corrections C1 and C2
// are the caller's, 1−β^t for step t (here t = 1), so at the first step
// m/C1 = ĝ and v/C2 = ĝ²: each coordinate moves by about η against the sign
// of its estimate, whatever the estimate's size, and not at all where it is
// zero. Apply returns Σ Δθ², the update's squared norm as stored.
func ExampleRule_Apply() {
	const b1, b2 = 0.9, 0.999
	r := update.Rule{Kind: update.Adam, LR: 1e-3, Beta1: b1, Beta2: b2, Eps: 1e-8, C1: 1 - b1, C2: 1 - b2}
	theta := []float32{1, 1, 1}
	ghat := []float64{0.5, -2, 0}
	m, v := make([]float32, len(theta)), make([]float32, len(theta)) // Adam keeps both: r.States() is 2
	ss := r.Apply(theta, ghat, m, v)
	fmt.Println("θ:", theta)
	fmt.Println("m:", m)
	fmt.Println("v:", v)
	fmt.Printf("Σ Δθ² = %.2g\n", ss)
	// Output:
	// θ: [0.999 1.001 1]
	// m: [0.05 -0.2 0]
	// v: [0.00025 0.004 0]
	// Σ Δθ² = 2e-06
}

// Stochastic rounding to bfloat16, which keeps a bfloat16 weight moving
// under updates smaller than its step: near 1 that step is 2⁻⁷, and
// 1 + 2⁻⁹ lies a quarter of the way from 1 to 1 + 2⁻⁷. Its float32 bits
// below bfloat16's mantissa are 0x4000, so it rounds up exactly for the
// random words whose low 16 bits are 0xC000 or more: a quarter of them.
func ExampleStochasticBF16() {
	x := float32(1 + 1.0/512)
	for _, r := range []uint32{0x0000, 0xBFFF, 0xC000, 0xFFFF} {
		fmt.Printf("r=0x%04X: %v\n", r, update.BF16ToFloat32(update.StochasticBF16(x, r)))
	}
	up := 0
	for r := range uint32(1 << 16) {
		if update.BF16ToFloat32(update.StochasticBF16(x, r)) > 1 {
			up++
		}
	}
	fmt.Printf("rounded up for %d of %d words\n", up, 1<<16)
	// Output:
	// r=0x0000: 1
	// r=0xBFFF: 1
	// r=0xC000: 1.0078125
	// r=0xFFFF: 1.0078125
	// rounded up for 16384 of 65536 words
}
