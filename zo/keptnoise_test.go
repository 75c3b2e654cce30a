package zo

import (
	"fmt"
	"math"
	"testing"

	"github.com/meazo-go/meazo/noise"
)

// An engine that keeps each step's noise steps as one that draws it twice.

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

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
