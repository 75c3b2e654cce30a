package zo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/noise"
)

// quadratic is f(x) = ½ Σ h_i x_i² over the concatenated groups, in float64.
func quadratic(h []float64) Func {
	return func(p [][]float32) float64 {
		var f float64
		i := 0
		for _, g := range p {
			for _, x := range g {
				f += 0.5 * h[i] * float64(x) * float64(x)
				i++
			}
		}
		return f
	}
}

func noiseOf(seed uint64, g, step, dir, n int, dist noise.Dist) []float64 {
	z32 := make([]float32, n)
	noise.Fill(z32, dist, noise.Stream{Seed: noise.StreamSeed(seed, g), Step: uint32(step), Dir: uint32(dir)}, 1)
	z := make([]float64, n)
	for i, v := range z32 {
		z[i] = float64(v)
	}
	return z
}

// recorder checks every variant against θ0 ± εz computed here from the noise
// contract, then delegates to a quadratic.
type recorder struct {
	t      *testing.T
	cfg    Config
	step   int
	groups [][]int // expected perturbed groups per variant
	labels []int   // expected Group per variant
	signs  []int
	dirs   []int
	f      Func
	calls  int
}

func (r *recorder) Evaluate(base [][]float32, vs []Variant) ([]float64, error) {
	r.calls++
	if len(vs) != len(r.labels) {
		r.t.Fatalf("step %d: %d variants, want %d", r.step, len(vs), len(r.labels))
	}
	for k, v := range vs {
		if v.Group != r.labels[k] || v.Sign != r.signs[k] || v.Dir != r.dirs[k] {
			r.t.Errorf("variant %d: group %d dir %d sign %d, want %d %d %d", k, v.Group, v.Dir, v.Sign, r.labels[k], r.dirs[k], r.signs[k])
		}
		perturbed := map[int]bool{}
		for _, g := range r.groups[k] {
			perturbed[g] = true
		}
		for g := range base {
			same := &v.Params[g][0] == &base[g][0]
			if same == perturbed[g] {
				r.t.Errorf("variant %d group %d: shares θ0's slice = %v, perturbed = %v", k, g, same, perturbed[g])
			}
			if !perturbed[g] {
				continue
			}
			z := noiseOf(r.cfg.Seed, g, r.step, v.Dir, len(base[g]), r.cfg.Dist)
			for i, x := range base[g] {
				want := float32(float64(x) + float64(v.Sign)*r.cfg.Eps*z[i])
				if v.Params[g][i] != want {
					r.t.Fatalf("variant %d group %d element %d = %v, want θ0 %v + %d·ε·z = %v", k, g, i, v.Params[g][i], x, v.Sign, want)
				}
			}
		}
	}
	return r.f.Evaluate(base, vs)
}

func TestVariants(t *testing.T) {
	dims := []int{5, 3, 7}
	h := make([]float64, 15)
	for i := range h {
		h[i] = float64(i + 1)
	}
	type want struct {
		groups            [][]int
		labels, dirs, sgn []int
	}
	tests := []struct {
		name string
		mode Mode
		opt  Optimizer
		want func(step int) want
	}{
		{"joint", Joint, NewSGD(0.01), func(int) want {
			all := []int{0, 1, 2}
			return want{[][]int{all, all, all, all}, []int{-1, -1, -1, -1}, []int{0, 0, 1, 1}, []int{1, -1, 1, -1}}
		}},
		{"grouped", Grouped, NewMEAZO(0.01), func(int) want {
			var w want
			for g := range 3 {
				for j := range 2 {
					for _, s := range []int{1, -1} {
						w.groups = append(w.groups, []int{g})
						w.labels, w.dirs, w.sgn = append(w.labels, g), append(w.dirs, j), append(w.sgn, s)
					}
				}
			}
			return w
		}},
		{"cyclic", Cyclic, NewAdam(0.01), func(step int) want {
			g := step % 3
			return want{[][]int{{g}, {g}, {g}, {g}}, []int{g, g, g, g}, []int{0, 0, 1, 1}, []int{1, -1, 1, -1}}
		}},
		{"fzoo joint", Joint, NewFZOO(0.01), func(int) want {
			all := []int{0, 1, 2}
			return want{[][]int{nil, all, all}, []int{Clean, -1, -1}, []int{0, 0, 1}, []int{0, 1, 1}}
		}},
		{"fzoo grouped", Grouped, NewFZOO(0.01), func(int) want {
			w := want{[][]int{nil}, []int{Clean}, []int{0}, []int{0}}
			for g := range 3 {
				for j := range 2 {
					w.groups = append(w.groups, []int{g})
					w.labels, w.dirs, w.sgn = append(w.labels, g), append(w.dirs, j), append(w.sgn, 1)
				}
			}
			return w
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := make([][]float32, len(dims))
			for g, n := range dims {
				params[g] = make([]float32, n)
				for i := range params[g] {
					params[g][i] = float32(g+1) * 0.1 * float32(i-2)
				}
			}
			cfg := Config{Eps: 1e-3, Q: 2, Dist: noise.Normal, Seed: 9, Mode: tt.mode}
			e, err := New(params, tt.opt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{t: t, cfg: cfg, f: quadratic(h)}
			for step := range 4 {
				w := tt.want(step)
				rec.step, rec.groups, rec.labels, rec.dirs, rec.signs = step, w.groups, w.labels, w.dirs, w.sgn
				st, err := e.Step(rec)
				if err != nil {
					t.Fatal(err)
				}
				if st.Step != step || len(st.Losses) != len(w.labels) {
					t.Errorf("stats step %d with %d losses", st.Step, len(st.Losses))
				}
			}
			if rec.calls != 4 {
				t.Errorf("objective called %d times for 4 steps", rec.calls)
			}
		})
	}
}

// step1 is the reference central-difference estimate for one group of the
// quadratic: d_j and z_j, computed here from the formulas.
func refEstimate(h []float64, x0 []float32, seed uint64, g, step, q int, eps float64, dist noise.Dist, off int) ([]float64, [][]float64) {
	f := func(x []float32) float64 {
		var s float64
		for i, v := range x {
			s += 0.5 * h[off+i] * float64(v) * float64(v)
		}
		return s
	}
	d := make([]float64, q)
	zs := make([][]float64, q)
	for j := range q {
		z := noiseOf(seed, g, step, j, len(x0), dist)
		xp, xm := make([]float32, len(x0)), make([]float32, len(x0))
		for i := range x0 {
			xp[i] = float32(float64(x0[i]) + eps*z[i])
			xm[i] = float32(float64(x0[i]) - eps*z[i])
		}
		d[j] = (f(xp) - f(xm)) / (2 * eps)
		zs[j] = z
	}
	return d, zs
}

// TestHandSteps runs three steps of each optimizer on a 4-dimensional
// quadratic (one group) and checks θ against the update rule written out here.
func TestHandSteps(t *testing.T) {
	h := []float64{1, 4, 0.5, 10}
	x0 := []float32{1, -0.5, 2, 0.3}
	const lr, eps, q = 0.05, 1e-3, 2
	const seed = 3
	type hand func(x []float64, t int, d []float64, z [][]float64)
	ghatOf := func(d []float64, z [][]float64, i int) float64 {
		var s float64
		for j := range d {
			s += d[j] * z[j][i] / float64(len(d))
		}
		return s
	}
	newHand := func(name string) hand {
		m, v := make([]float64, 4), make([]float64, 4)
		var vs float64
		buf := make([]float64, 4)
		switch name {
		case "zo-sgd":
			return func(x []float64, t int, d []float64, z [][]float64) {
				for i := range x {
					x[i] -= lr * ghatOf(d, z, i)
				}
			}
		case "zo-sgd-mmt-wd":
			return func(x []float64, t int, d []float64, z [][]float64) {
				for i := range x {
					buf[i] = 0.9*buf[i] + ghatOf(d, z, i) + 0.01*x[i]
					x[i] -= lr * buf[i]
				}
			}
		case "zo-adam", "zo-adam-b1=0":
			b1 := 0.9
			if name == "zo-adam-b1=0" {
				b1 = 0
			}
			return func(x []float64, t int, d []float64, z [][]float64) {
				for i := range x {
					g := ghatOf(d, z, i)
					m[i] = b1*m[i] + (1-b1)*g
					v[i] = 0.999*v[i] + 0.001*g*g
					x[i] -= lr * (m[i] / (1 - math.Pow(b1, float64(t)))) / (math.Sqrt(v[i]/(1-math.Pow(0.999, float64(t)))) + 1e-8)
				}
			}
		case "radazo":
			return func(x []float64, t int, d []float64, z [][]float64) {
				for i := range x {
					m[i] = 0.9*m[i] + 0.1*ghatOf(d, z, i)
					v[i] = 0.999*v[i] + 0.001*m[i]*m[i]
					x[i] -= lr * m[i] / (math.Sqrt(v[i]) + 1e-8)
				}
			}
		case "meazo":
			return func(x []float64, t int, d []float64, z [][]float64) {
				g := (d[0] + d[1]) / 2
				vs = 0.999*vs + 0.001*g*g
				c := lr / (math.Sqrt(vs/(1-math.Pow(0.999, float64(t)))) + 1e-8)
				for i := range x {
					x[i] -= c * ghatOf(d, z, i)
				}
			}
		}
		panic(name)
	}
	tests := []struct {
		name string
		opt  Optimizer
	}{
		{"zo-sgd", NewSGD(lr)},
		{"zo-sgd-mmt-wd", &SGD{LR: lr, Momentum: 0.9, WeightDecay: 0.01}},
		{"zo-adam", NewAdam(lr)},
		{"zo-adam-b1=0", &Adam{LR: lr, Beta2: 0.999, Eps: 1e-8}},
		{"radazo", NewRAdaZO(lr)},
		{"meazo", NewMEAZO(lr)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := [][]float32{append([]float32(nil), x0...)}
			e, err := New(params, tt.opt, Config{Eps: eps, Q: q, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 4)
			for i := range want {
				want[i] = float64(x0[i])
			}
			step := newHand(tt.name)
			for s := range 3 {
				// The reference estimate is taken at the engine's θ0 so that
				// float32 rounding of θ does not accumulate into the check.
				d, z := refEstimate(h, params[0], seed, 0, s, q, eps, noise.Normal, 0)
				st, err := e.Step(quadratic(h))
				if err != nil {
					t.Fatal(err)
				}
				for j := range d {
					if math.Abs(st.Units[0].D[j]-d[j]) > 1e-12*math.Abs(d[j]) {
						t.Errorf("step %d: d_%d = %.15g, want %.15g", s, j, st.Units[0].D[j], d[j])
					}
				}
				step(want, s+1, d, z)
				for i := range want {
					if math.Abs(float64(params[0][i])-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
						t.Errorf("step %d: θ[%d] = %.8g, want %.8g", s, i, params[0][i], want[i])
					}
					want[i] = float64(params[0][i])
				}
			}
		})
	}
}

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

// TestSphereScaling: with sphere noise d_j is multiplied by the dimension.
func TestSphereScaling(t *testing.T) {
	h := []float64{1, 2, 3, 4, 5}
	x0 := []float32{1, 1, 1, 1, 1}
	e, err := New([][]float32{append([]float32(nil), x0...)}, NewSGD(0), Config{Eps: 1e-3, Q: 1, Dist: noise.Sphere, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Step(quadratic(h))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := refEstimate(h, x0, 2, 0, 0, 1, 1e-3, noise.Sphere, 0)
	if got := st.Units[0].D[0]; math.Abs(got-5*d[0]) > 1e-9*math.Abs(d[0]) {
		t.Errorf("sphere d = %g, want 5·%g", got, d[0])
	}
}

// TestWorkerInvariance: the same θ after several steps for any worker count,
// across several chunks.
func TestWorkerInvariance(t *testing.T) {
	dims := []int{2*noise.ChunkSize + 5, 77}
	run := func(workers int, opt Optimizer, mode Mode) [][]float32 {
		params := make([][]float32, len(dims))
		for g, n := range dims {
			params[g] = make([]float32, n)
			for i := range params[g] {
				params[g][i] = float32(math.Cos(float64(i + g)))
			}
		}
		e, err := New(params, opt, Config{Eps: 1e-3, Q: 2, Seed: 4, Mode: mode, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		f := func(p [][]float32) float64 {
			var s float64
			for _, g := range p {
				for i, x := range g {
					s += float64(i%5+1) * float64(x) * float64(x)
				}
			}
			return s
		}
		for range 3 {
			if _, err := e.Step(Func(f)); err != nil {
				t.Fatal(err)
			}
		}
		return params
	}
	for _, mode := range []Mode{Joint, Grouped} {
		ref := run(1, NewAdam(1e-3), mode)
		for _, w := range []int{2, 5} {
			got := run(w, NewAdam(1e-3), mode)
			for g := range ref {
				if i := firstDiff(ref[g], got[g]); i >= 0 {
					t.Errorf("%v workers=%d: group %d element %d differs", mode, w, g, i)
				}
			}
		}
	}
}

// TestStateRoundTrip: saving after 3 steps and restoring into a fresh engine
// continues bit-identically.
func TestStateRoundTrip(t *testing.T) {
	makers := []func() Optimizer{
		func() Optimizer { return &SGD{LR: 0.01, Momentum: 0.9} },
		func() Optimizer { return NewAdam(0.01) },
		func() Optimizer { return NewRAdaZO(0.01) },
		func() Optimizer { return NewMEAZO(0.01) },
		func() Optimizer { return NewFZOO(0.01) },
	}
	h := []float64{1, 2, 3, 4, 5, 6, 7}
	for _, mk := range makers {
		name := mk().Name()
		t.Run(name, func(t *testing.T) {
			fresh := func() [][]float32 { return [][]float32{{1, 2, 3}, {-1, 0.5, 0.25, 2}} }
			cfg := Config{Eps: 1e-3, Q: 2, Seed: 8, Mode: Grouped}
			a := fresh()
			ea, _ := New(a, mk(), cfg)
			for range 3 {
				if _, err := ea.Step(quadratic(h)); err != nil {
					t.Fatal(err)
				}
			}
			state, err := ea.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			b := [][]float32{append([]float32(nil), a[0]...), append([]float32(nil), a[1]...)}
			eb, _ := New(b, mk(), cfg)
			if err := eb.UnmarshalBinary(state); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				ea.Step(quadratic(h))
				eb.Step(quadratic(h))
			}
			for g := range a {
				if i := firstDiff(a[g], b[g]); i >= 0 {
					t.Errorf("group %d element %d: %v after restore, %v without", g, i, b[g][i], a[g][i])
				}
			}
			sa, _ := ea.MarshalBinary()
			sb, _ := eb.MarshalBinary()
			if !bytes.Equal(sa, sb) {
				t.Error("states differ after the same steps")
			}
			// A refused state changes nothing (it zeroed MEAZO's v before).
			for _, bad := range [][]byte{state[:len(state)-3], append(slices.Clone(state), 0)} {
				if err := eb.UnmarshalBinary(bad); err == nil {
					t.Error("truncated or overlong state accepted")
				}
				if after, _ := eb.MarshalBinary(); !bytes.Equal(after, sb) {
					t.Error("a refused state changed the optimizer's")
				}
			}
		})
	}
	e, _ := New([][]float32{{1}}, NewAdam(1), Config{Eps: 1, Q: 1})
	s, _ := e.MarshalBinary()
	e2, _ := New([][]float32{{1}}, NewRAdaZO(1), Config{Eps: 1, Q: 1})
	if err := e2.UnmarshalBinary(s); err == nil {
		t.Error("zo-adam state accepted by radazo")
	}
}

// TestStateBytes: the optimizer state for d = 1.7M parameters in 16 groups.
func TestStateBytes(t *testing.T) {
	const d, groups = 1_700_000, 16
	params := make([][]float32, groups) // 1.7M = 16 × 106,250
	for g := range params {
		params[g] = make([]float32, d/groups)
	}
	tests := []struct {
		opt  Optimizer
		mode Mode
		want int64
	}{
		{NewSGD(1), Joint, 0},
		{NewSGD(1), Grouped, 0},
		{NewFZOO(1), Joint, 0},
		{NewMEAZO(1), Joint, 8},
		{NewMEAZO(1), Grouped, 8 * groups},
		{NewAdam(1), Grouped, 8 * d},
		{NewRAdaZO(1), Joint, 8 * d},
		{&SGD{LR: 1, Momentum: 0.9}, Joint, 4 * d},
	}
	for _, tt := range tests {
		if _, err := New(params, tt.opt, Config{Eps: 1e-3, Q: 2, Mode: tt.mode}); err != nil {
			t.Fatal(err)
		}
		if got := tt.opt.StateBytes(); got != tt.want {
			t.Errorf("%s %v: %d state bytes, want %d", tt.opt.Name(), tt.mode, got, tt.want)
		}
		t.Logf("state bytes for d=%d: %-7s %-7v %d", d, tt.opt.Name(), tt.mode, tt.opt.StateBytes())
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

func TestEngineErrors(t *testing.T) {
	p := [][]float32{{1, 2}}
	if _, err := New(p, NewSGD(1), Config{Eps: 0, Q: 1}); err == nil {
		t.Error("eps 0 accepted")
	}
	if _, err := New([][]float32{{1}, {}}, NewSGD(1), Config{Eps: 1, Q: 1}); err == nil {
		t.Error("empty group accepted")
	}
	if _, err := New([][]float32{{1}, {2}}, NewSGD(1), Config{Eps: 1, Q: 1, Dist: noise.Sphere}); err == nil {
		t.Error("joint sphere over two groups accepted")
	}
	e, _ := New(p, NewSGD(1), Config{Eps: 1e-3, Q: 1})
	if _, err := e.Step(Func(func([][]float32) float64 { return math.NaN() })); err == nil {
		t.Error("NaN loss accepted")
	}
	bad := objectiveFunc(func(_ [][]float32, vs []Variant) ([]float64, error) { return []float64{1}, nil })
	if _, err := e.Step(bad); err == nil {
		t.Error("wrong loss count accepted")
	}
	if p[0][0] != 1 || p[0][1] != 2 || e.StepCount() != 0 {
		t.Error("failed steps changed θ or the step count")
	}
	// Finite losses far apart over a tiny ε: an infinite projected
	// gradient is a non-finite step (ErrNonFinite), the optimizer untouched.
	m := NewMEAZO(1)
	e, _ = New(p, m, Config{Eps: 1e-10, Q: 1})
	huge := objectiveFunc(func(_ [][]float32, vs []Variant) ([]float64, error) { return []float64{1e300, -1e300}, nil })
	if _, err := e.Step(huge); !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "projected gradient 0 of group 0 is +Inf") {
		t.Errorf("infinite projected gradient: %v", err)
	}
	if _, err := e.Step(Func(func([][]float32) float64 { return math.Inf(1) })); !errors.Is(err, ErrNonFinite) {
		t.Errorf("infinite loss: %v, want ErrNonFinite", err)
	}
	if p[0][0] != 1 || p[0][1] != 2 || e.StepCount() != 0 || m.V()[0] != 0 {
		t.Error("a non-finite step changed θ, the step count or v")
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

type objectiveFunc func([][]float32, []Variant) ([]float64, error)

func (f objectiveFunc) Evaluate(b [][]float32, vs []Variant) ([]float64, error) { return f(b, vs) }

// BenchmarkStep measures a whole MEAZO step (materialise θ0 ± εz, then
// regenerate z and update) on d = 2.3M parameters with a free objective.
func BenchmarkStep(b *testing.B) {
	const d = 2_300_000
	for _, tc := range []struct {
		name string
		opt  func() Optimizer
	}{{"meazo", func() Optimizer { return NewMEAZO(1e-4) }}, {"zo-adam", func() Optimizer { return NewAdam(1e-4) }}} {
		for _, workers := range []int{1, 2, 0} { // 0: GOMAXPROCS
			b.Run(fmt.Sprintf("%s/q=1/workers=%d", tc.name, workers), func(b *testing.B) {
				params := [][]float32{make([]float32, d)}
				e, err := New(params, tc.opt(), Config{Eps: 1e-6, Q: 1, Workers: workers})
				if err != nil {
					b.Fatal(err)
				}
				free := objectiveFunc(func(_ [][]float32, vs []Variant) ([]float64, error) {
					return []float64{1, 0.5}, nil
				})
				for b.Loop() {
					if _, err := e.Step(free); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/d, "ns/param")
			})
		}
	}
}

// TestKeptNoise: an engine that keeps each step's noise (drawn ahead, while
// the step before it evaluates) steps θ bit for bit as one that draws z
// twice a step, in every mode, with sphere and discrete noise, through a
// failed evaluation and a restore from saved state.
func TestKeptNoise(t *testing.T) {
	dims := []int{noise.ChunkSize + 9, 40}
	for _, c := range []struct {
		name string
		mode Mode
		dist noise.Dist
		q    int
		opt  func() Optimizer
	}{
		{"joint normal meazo", Joint, noise.Normal, 1, func() Optimizer { return NewMEAZO(1e-2) }},
		{"grouped sphere adam", Grouped, noise.Sphere, 2, func() Optimizer { return NewAdam(1e-3) }},
		{"cyclic rademacher sgd", Cyclic, noise.Rademacher, 1, func() Optimizer { return NewSGD(1e-3) }},
		{"joint ternary fzoo", Joint, noise.Ternary, 3, func() Optimizer { return NewFZOO(1e-3) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(keep bool) ([][]float32, []float64) {
				params := make([][]float32, len(dims))
				for g, n := range dims {
					params[g] = make([]float32, n)
					for i := range params[g] {
						params[g][i] = float32(math.Sin(float64(3*i + g)))
					}
				}
				cfg := Config{Eps: 1e-3, Q: c.q, Dist: c.dist, Seed: 11, Mode: c.mode, Workers: 3}
				e, err := New(params, c.opt(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !e.θ.(*hostParams).keep {
					t.Fatal("an engine of this size does not keep its noise")
				}
				e.θ.(*hostParams).keep = keep
				f := quadratic(func() []float64 {
					h := make([]float64, dims[0]+dims[1])
					for i := range h {
						h[i] = float64(i%7 + 1)
					}
					return h
				}())
				var losses []float64
				for s := range 6 {
					if s == 2 { // a failed evaluation: the step is taken again
						failing := objectiveFunc(func([][]float32, []Variant) ([]float64, error) { return nil, fmt.Errorf("planted") })
						if _, err := e.Step(failing); err == nil {
							t.Fatal("the failing objective's step succeeded")
						}
					}
					if s == 4 { // a restore into a fresh engine, as a resumed run does
						state, err := e.MarshalBinary()
						if err != nil {
							t.Fatal(err)
						}
						if e, err = New(params, c.opt(), cfg); err != nil {
							t.Fatal(err)
						}
						e.θ.(*hostParams).keep = keep
						if err := e.UnmarshalBinary(state); err != nil {
							t.Fatal(err)
						}
					}
					// The objective returns once the next step's noise is
					// drawn, so that a draw into the wrong buffer shows.
					waits := objectiveFunc(func(base [][]float32, vs []Variant) ([]float64, error) {
						for _, n := range e.θ.(*hostParams).kept {
							if n != nil {
								<-n.ready
							}
						}
						return f.Evaluate(base, vs)
					})
					st, err := e.Step(waits)
					if err != nil {
						t.Fatal(err)
					}
					losses = append(losses, st.Losses...)
				}
				return params, losses
			}
			want, wantLosses := run(false)
			got, gotLosses := run(true)
			for g := range want {
				if i := firstDiff(want[g], got[g]); i >= 0 {
					t.Errorf("group %d element %d: %v with kept noise, %v drawn twice", g, i, got[g][i], want[g][i])
				}
			}
			if fmt.Sprint(gotLosses) != fmt.Sprint(wantLosses) {
				t.Errorf("losses with kept noise %v, drawn twice %v", gotLosses, wantLosses)
			}
		})
	}
}

// TestKeepsNoiseBySize: noise is kept for adapters, not for θ of more than
// keptNoiseMax values per step.
func TestKeepsNoiseBySize(t *testing.T) {
	for _, c := range []struct {
		d, q int
		keep bool
	}{{1000, 1, true}, {keptNoiseMax, 1, true}, {keptNoiseMax/2 + 1, 2, false}} {
		e, err := New([][]float32{make([]float32, c.d)}, NewSGD(1e-3), Config{Eps: 1e-3, Q: c.q})
		if err != nil {
			t.Fatal(err)
		}
		if e.θ.(*hostParams).keep != c.keep {
			t.Errorf("d = %d, q = %d: keeps noise %v, want %v", c.d, c.q, e.θ.(*hostParams).keep, c.keep)
		}
	}
}

// TestStateShape: a saved state restores only into an engine over θ of the
// same groups in the same mode; a state in the first format (no shape) still
// restores.
func TestStateShape(t *testing.T) {
	mk := func(dims []int, mode Mode) *Engine {
		p := make([][]float32, len(dims))
		for g, d := range dims {
			p[g] = make([]float32, d)
		}
		e, err := New(p, NewMEAZO(1e-3), Config{Eps: 1e-3, Q: 1, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	src := mk([]int{2, 3}, Grouped)
	if _, err := src.Step(quadratic([]float64{1, 2, 3, 4, 5})); err != nil {
		t.Fatal(err)
	}
	// Wait for the next step's noise, drawn ahead: a test after this one
	// may switch the noise kernels that the draw reads.
	src.θ.(*hostParams).noise(src.StepCount())
	b, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := mk([]int{2, 3}, Grouped).UnmarshalBinary(b); err != nil {
		t.Errorf("same shape: %v", err)
	}
	for _, other := range []*Engine{mk([]int{3, 2}, Grouped), mk([]int{2, 3}, Cyclic)} {
		if err := other.UnmarshalBinary(b); err == nil || !strings.Contains(err.Error(), "saved for mode") {
			t.Errorf("another shape or mode: %v", err)
		}
	}
	// The first format: "zo-engine", the step, the optimizer's state.
	ob, _ := src.opt.MarshalBinary()
	v1 := binary.LittleEndian.AppendUint64([]byte("zo-engine"), 1)
	dst := mk([]int{2, 3}, Grouped)
	if err := dst.UnmarshalBinary(append(v1, ob...)); err != nil || dst.StepCount() != 1 {
		t.Errorf("first format: %v, step %d", err, dst.StepCount())
	}
	for n := range len(b) {
		if err := mk([]int{2, 3}, Grouped).UnmarshalBinary(b[:n]); err == nil {
			t.Fatalf("a state cut to %d of %d bytes restored", n, len(b))
		}
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
