package update

import (
	"math"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestRulesKnownSteps checks one step of each rule against values worked
// out by hand from docs/ALGORITHMS.md's formulas.
func TestRulesKnownSteps(t *testing.T) {
	tests := []struct {
		name       string
		r          Rule
		x, g       float64
		m, v       float32 // state before
		want       float64 // θ after, before rounding
		wantM      float32
		wantV      float32
		hasM, hasV bool
	}{
		{"sgd", Rule{Kind: SGD, LR: 0.1}, 1, 0.5, 0, 0, 0.95, 0, 0, false, false},
		{"sgd weight decay", Rule{Kind: SGD, LR: 0.1, WeightDecay: 0.5}, 2, 1, 0, 0, 2 - 0.1*(1+1), 0, 0, false, false},
		{"sgd momentum", Rule{Kind: SGD, LR: 0.1, Momentum: 0.9}, 1, 1, 2, 0, 1 - 0.1*(0.9*2+1), float32(0.9*2 + 1), 0, true, false},
		// Adam's first step: m̂ = ĝ, v̂ = ĝ², so θ moves by η·ĝ/(|ĝ|+eps).
		{"adam first step", Rule{Kind: Adam, LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 1 - 0.9, C2: 1 - 0.999}, 1, -2, 0, 0,
			1 - 0.01*(0.1*-2/0.1)/(math.Sqrt(0.001*4/0.001)+1e-8), float32(0.1 * -2), float32(0.001 * 4), true, true},
		{"adam beta1 0", Rule{Kind: Adam, LR: 0.01, Beta2: 0.5, Eps: 1e-8, C1: 1, C2: 0.5}, 1, 3, 0, 4,
			1 - 0.01*3/(math.Sqrt((0.5*4+0.5*9)/0.5)+1e-8), 0, float32(0.5*4 + 0.5*9), false, true},
		{"radazo", Rule{Kind: RAdaZO, LR: 0.1, Beta1: 0.5, Beta2: 0.5, Eps: 1e-8, C1: 1, C2: 1}, 1, 2, 2, 8,
			1 - 0.1*2/(math.Sqrt(0.5*8+0.5*4)+1e-8), 2, float32(0.5*8 + 0.5*4), true, true},
	}
	for _, tt := range tests {
		if tt.r.HasM() != tt.hasM || tt.r.HasV() != tt.hasV {
			t.Errorf("%s: HasM %v HasV %v, want %v %v", tt.name, tt.r.HasM(), tt.r.HasV(), tt.hasM, tt.hasV)
		}
		if n := tt.r.States(); n != btoi(tt.hasM)+btoi(tt.hasV) {
			t.Errorf("%s: States() = %d", tt.name, n)
		}
		m, v := tt.m, tt.v
		var mp, vp *float32
		if tt.hasM {
			mp = &m
		}
		if tt.hasV {
			vp = &v
		}
		got := tt.r.Target(tt.x, tt.g, mp, vp)
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: θ = %.15g, want %.15g", tt.name, got, tt.want)
		}
		if m != tt.wantM || v != tt.wantV {
			t.Errorf("%s: m, v = %v, %v, want %v, %v", tt.name, m, v, tt.wantM, tt.wantV)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestApplyIsTarget: Apply (and its fast path) moves every coordinate as
// Target defines, and its sum of squares is the stored changes'.
func TestApplyIsTarget(t *testing.T) {
	rules := []Rule{
		{Kind: SGD, LR: 0.03},
		{Kind: SGD, LR: 0.03, WeightDecay: 0.1},
		{Kind: SGD, LR: 0.03, Momentum: 0.9},
		{Kind: Adam, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 0.19, C2: 0.002},
		{Kind: Adam, LR: 1e-3, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 0.002},
		{Kind: RAdaZO, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 1},
	}
	const n = 257
	for _, r := range rules {
		theta, ghat := make([]float32, n), make([]float64, n)
		var m, v []float32
		if r.HasM() {
			m = make([]float32, n)
		}
		if r.HasV() {
			v = make([]float32, n)
		}
		for i := range theta {
			theta[i] = float32(math.Sin(float64(i)))
			ghat[i] = math.Cos(float64(3 * i))
			if m != nil {
				m[i] = float32(math.Sin(float64(5*i))) / 10
			}
			if v != nil {
				v[i] = float32(1+math.Sin(float64(7*i))) / 10
			}
		}
		want := append([]float32(nil), theta...)
		wm, wv := append([]float32(nil), m...), append([]float32(nil), v...)
		var wss float64
		for i := range want {
			x := float64(want[i])
			nx := float32(r.Target(x, ghat[i], at(wm, i), at(wv, i)))
			wss += (float64(nx) - x) * (float64(nx) - x)
			want[i] = nx
		}
		ss := r.Apply(theta, ghat, m, v)
		for i := range theta {
			if math.Float32bits(theta[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: θ[%d] = %v, want %v", r, i, theta[i], want[i])
			}
		}
		if ss != wss {
			t.Errorf("%+v: Σ Δθ² = %v, want %v", r, ss, wss)
		}
	}
}

// TestStochasticBF16Unbiased: over all 2¹⁶ random words, a value between two
// bfloat16 numbers rounds up in exactly the share of cases its distance from
// the lower one says, so the mean of the rounded values is the value.
func TestStochasticBF16Unbiased(t *testing.T) {
	for _, x := range []float32{1 + 0x1p-10, -3.14159, 1e-30, 0.1234567} {
		var sum float64
		for r := range uint32(1 << 16) {
			sum += float64(BF16ToFloat32(StochasticBF16(x, r)))
		}
		if mean := sum / (1 << 16); mean != float64(x) {
			t.Errorf("mean of the stochastic roundings of %v = %v", x, mean)
		}
	}
	// A bfloat16 value stays itself whatever the word; NaN stays NaN.
	for _, r := range []uint32{0, 0xFFFF, 0x12345678} {
		if got := StochasticBF16(1.5, r); got != 0x3FC0 {
			t.Errorf("StochasticBF16(1.5, %x) = %04x", r, got)
		}
		if got := BF16ToFloat32(StochasticBF16(float32(math.NaN()), r)); !math.IsNaN(float64(got)) {
			t.Errorf("NaN rounded to %v", got)
		}
	}
}

// TestApplyBF16 moves bfloat16 coordinates as Target then stochastic
// rounding do, and an update far below a bfloat16 step moves a coordinate
// only sometimes, never by less than a step.
func TestApplyBF16(t *testing.T) {
	r := Rule{Kind: SGD, LR: 1}
	const n = 4096
	theta := make([]uint16, n)
	ghat := make([]float64, n)
	rnd := make([]uint32, n)
	for i := range theta {
		theta[i] = 0x3F80 // 1.0
		ghat[i] = -1e-4   // a step of 1e-4, below bfloat16's 2⁻⁷ at 1
		rnd[i] = uint32(i * 16)
	}
	r.ApplyBF16(theta, ghat, nil, nil, rnd)
	moved := 0
	for _, b := range theta {
		switch b {
		case 0x3F80:
		case 0x3F81:
			moved++
		default:
			t.Fatalf("1 + 1e-4 rounded to %v", BF16ToFloat32(b))
		}
	}
	// float32(1+1e-4) is 1 + 839/2²³; bfloat16's step at 1 is 2¹⁶/2²³.
	want := 839.0 / 65536 * n
	if math.Abs(float64(moved)-want) > 1 {
		t.Errorf("%d of %d coordinates moved, want %.1f", moved, n, want)
	}
}

// TestNoFusedMultiplyAdd: the rules round every product before they add it
// on every build (arm64 and GOAMD64=v3 would fuse them otherwise), as the
// CUDA kernel does: a coordinate moves the same way on every device.
func TestNoFusedMultiplyAdd(t *testing.T) { asmcheck.NoFusedMultiplyAdd(t, ".") }
