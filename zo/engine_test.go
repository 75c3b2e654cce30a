package zo

import (
	"errors"
	"fmt"
	"math"
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
