package zo

import (
	"math"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/noise"
)

// The optimizers' own rules: FZOO's and MEAZO's steps by hand, the paper's
// Proposition 3.1, and the settings each refuses.

// TestFZOOHandStep checks FZOO's normalised one-sided step and its logged L0.
func TestFZOOHandStep(t *testing.T) {
	h := []float64{2, 1, 3}
	x0 := []float32{0.5, -1, 0.25}
	const lr, eps, q = 0.1, 1e-2, 3
	params := [][]float32{append([]float32(nil), x0...)}
	e, err := New(params, NewFZOO(lr), Config{Eps: eps, Q: q, Dist: noise.Rademacher, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	f := quadratic(h)
	l0 := f([][]float32{x0})
	var ls []float64
	var zs [][]float64
	for j := range q {
		z := noiseOf(11, 0, 0, j, 3, noise.Rademacher)
		x := make([]float32, 3)
		for i := range x {
			x[i] = float32(float64(x0[i]) + eps*z[i])
		}
		ls, zs = append(ls, f([][]float32{x})), append(zs, z)
	}
	var mean, sd float64
	for _, l := range ls {
		mean += l / q
	}
	for _, l := range ls {
		sd += (l - mean) * (l - mean) / q
	}
	sd = math.Sqrt(sd)
	st, err := e.Step(f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Loss != l0 {
		t.Errorf("logged loss %g, want L0 %g", st.Loss, l0)
	}
	// σ_t is the std of the d_j = (L_j − L0)/ε: the losses' std over ε.
	if got := st.Units[0].Sigma; math.Abs(got-sd/eps) > 1e-9*sd/eps || got == 0 {
		t.Errorf("σ_t %.10g, want the losses' std over ε %.10g", got, sd/eps)
	}
	for i := range x0 {
		want := float64(x0[i])
		for j := range q {
			want -= lr * (ls[j] - l0) / (q * sd) * zs[j][i]
		}
		if math.Abs(float64(params[0][i])-want) > 1e-6 {
			t.Errorf("θ[%d] = %.8g, want %.8g", i, params[0][i], want)
		}
	}
	if _, err := New(params, NewFZOO(lr), Config{Eps: eps, Q: 1}); err == nil {
		t.Error("fzoo with q = 1 accepted")
	}
}

// TestMEAZOFirstStep: with √v̂ = |g| at t = 1 the first step moves every
// coordinate by about η·|z_i| (q = 1, tiny ζ).
func TestMEAZOFirstStep(t *testing.T) {
	const n, lr = 1000, 1e-3
	h := make([]float64, n)
	x0 := make([]float32, n)
	for i := range h {
		h[i] = float64(1 + i%7)
		x0[i] = float32(math.Sin(float64(i)))
	}
	params := [][]float32{append([]float32(nil), x0...)}
	e, err := New(params, NewMEAZO(lr), Config{Eps: 1e-4, Q: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Step(quadratic(h))
	if err != nil {
		t.Fatal(err)
	}
	z := noiseOf(1, 0, 0, 0, n, noise.Normal)
	for i := range x0 {
		moved := math.Abs(float64(params[0][i]) - float64(x0[i]))
		if want := lr * math.Abs(z[i]); math.Abs(moved-want) > 1e-6+1e-3*want {
			t.Fatalf("θ[%d] moved %.6g, want η|z| = %.6g", i, moved, want)
		}
	}
	g := st.Units[0].D[0]
	if want := 0.001 * g * g; math.Abs(st.V[0]-want) > 1e-12*want {
		t.Errorf("v_1 = %g, want (1-β)g² = %g", st.V[0], want)
	}
}

// TestProposition31 checks the paper's Proposition 3.1 by Monte Carlo: for
// Gaussian z and ε → 0, E[ĝ_i²] = (1/q)(‖∇f‖² + ∇f_i²) + ∇f_i². The objective is
// linear (f = gᵀx, so the central difference is exact) and ZO-SGD with η = 1
// moves θ by exactly -ĝ each step.
func TestProposition31(t *testing.T) {
	grad := []float64{3, -1, 0.5, 0, 2}
	var norm2 float64
	for _, g := range grad {
		norm2 += g * g
	}
	for _, q := range []int{1, 4} {
		const n = 40000
		params := [][]float32{make([]float32, len(grad))}
		e, err := New(params, NewSGD(1), Config{Eps: 1e-2, Q: q, Seed: 2024})
		if err != nil {
			t.Fatal(err)
		}
		lin := Func(func(p [][]float32) float64 {
			var s float64
			for i, x := range p[0] {
				s += grad[i] * float64(x)
			}
			return s
		})
		sum, sum2 := make([]float64, len(grad)), make([]float64, len(grad))
		prev := make([]float64, len(grad))
		for range n {
			if _, err := e.Step(lin); err != nil {
				t.Fatal(err)
			}
			for i, x := range params[0] {
				g := prev[i] - float64(x)
				prev[i] = float64(x)
				sum[i] += g * g
				sum2[i] += g * g * g * g
			}
		}
		for i, g := range grad {
			mean := sum[i] / n
			se := math.Sqrt((sum2[i]/n - mean*mean) / n)
			want := (norm2+g*g)/float64(q) + g*g
			if math.Abs(mean-want) > 4*se {
				t.Errorf("q=%d: E[ĝ_%d²] = %.4g ± %.2g, want %.4g", q, i, mean, se, want)
			}
			// The check must be able to tell the formula from the naive ∇f².
			if g*g > 0 && math.Abs(g*g-want) < 8*se {
				t.Errorf("q=%d, i=%d: sampling error %.2g too large to discriminate", q, i, se)
			}
		}
	}
}

// TestOptimizerSettings: hyperparameters that would turn θ into NaN, or
// directions beyond counting, are refused by New.
func TestOptimizerSettings(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		opt  Optimizer
		q    int
		want string
	}{
		{"meazo zeta 0", &MEAZO{LR: 1, Beta: 0.9, Zeta: 0}, 1, "meazo: zeta must be positive"},
		{"meazo beta NaN", &MEAZO{LR: 1, Beta: nan, Zeta: 1e-8}, 1, "meazo: beta NaN outside [0, 1)"},
		{"adam eps 0", &Adam{LR: 1, Beta1: 0.9, Beta2: 0.999}, 1, "zo-adam: eps must be positive"},
		{"adam beta1 NaN", &Adam{LR: 1, Beta1: nan, Beta2: 0.999, Eps: 1e-8}, 1, "zo-adam: betas (NaN, 0.999)"},
		{"radazo eps Inf", &RAdaZO{LR: 1, Beta1: 0.9, Beta2: 0.999, Eps: math.Inf(1)}, 1, "radazo: eps must be positive"},
		{"sgd momentum NaN", &SGD{LR: 1, Momentum: nan}, 1, "zo-sgd: momentum NaN"},
		{"sgd weight decay -1", &SGD{LR: 1, WeightDecay: -1}, 1, "zo-sgd: weight decay must be >= 0"},
		{"sgd lr NaN", &SGD{LR: nan}, 1, "zo-sgd: lr must be >= 0 and finite"},
		{"fzoo lr -1", &FZOO{LR: -1}, 2, "fzoo: lr must be >= 0"},
		{"q too large", NewSGD(1), 1 << 62, "more directions than supported"},
	} {
		_, err := New([][]float32{{1, 2, 3, 4}}, tc.opt, Config{Eps: 1e-3, Q: tc.q})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := New([][]float32{{1, 2}}, NewSGD(0), Config{Eps: 1e-3, Q: 1}); err != nil {
		t.Errorf("lr 0 (estimate without moving): %v", err)
	}
}

// ZO-SGD's weight decay leaves Config.NoDecay's coordinates alone (MeZO
// never decays a bias or a norm weight) and moves every other one by
// 1 − ηλ, in both groups, spans across chunk boundaries included.
func TestNoDecay(t *testing.T) {
	dims := []int{3*noise.ChunkSize + 7, 40}
	params := make([][]float32, len(dims))
	for g, d := range dims {
		params[g] = make([]float32, d)
		for i := range params[g] {
			params[g][i] = 1
		}
	}
	spans := []Span{{1, 30, 40}, {0, noise.ChunkSize - 5, noise.ChunkSize + 5}, {0, 0, 2}}
	o := NewSGD(0.1)
	o.WeightDecay = 0.5
	e, err := New(params, o, Config{Eps: 1e-3, Q: 1, Seed: 1, Mode: Joint, Workers: 3, NoDecay: spans})
	if err != nil {
		t.Fatal(err)
	}
	flat := objectiveFunc(func(_ [][]float32, vs []Variant) ([]float64, error) { return make([]float64, len(vs)), nil })
	if _, err := e.Step(flat); err != nil {
		t.Fatal(err)
	}
	decayed := float32(1 - float64(0.1*(0+float64(0.5*1.0))))
	for g, p := range params {
		for i, x := range p {
			want := decayed
			for _, sp := range spans {
				if sp.Group == g && i >= sp.Lo && i < sp.Hi {
					want = 1
				}
			}
			if x != want {
				t.Fatalf("group %d [%d] = %v, want %v", g, i, x, want)
			}
		}
	}
	for _, bad := range [][]Span{{{0, 5, 5}}, {{2, 0, 1}}, {{1, 0, 41}}, {{0, 0, 10}, {0, 9, 12}}} {
		if _, err := New(params, NewSGD(0.1), Config{Eps: 1e-3, Q: 1, NoDecay: bad}); err == nil {
			t.Errorf("NoDecay %v accepted", bad)
		}
	}
}
