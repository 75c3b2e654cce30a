package zo

import (
	"slices"
	"strings"
	"testing"
)

// TestSavedSecondMoments: ZO-Adam's and R-AdaZO's v read from a saved state
// without an engine are the optimizer's own, per group, with β1 = 0 (no m
// saved) too; the step and the groups' sizes come along; MEAZO, ZO-SGD and a
// damaged state are refused with a reason.
func TestSavedSecondMoments(t *testing.T) {
	noM := NewAdam(0.1)
	noM.Beta1 = 0
	for _, c := range []struct {
		name string
		opt  Optimizer
		v    func(g int) []float32
	}{
		{"zo-adam", NewAdam(0.1), nil},
		{"zo-adam β1=0", noM, nil},
		{"radazo", NewRAdaZO(0.1), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := New([][]float32{{1, 2}, {3, 4, 5}}, c.opt, Config{Eps: 1e-3, Q: 1, Mode: Grouped, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer e.θ.(*hostParams).noise(e.StepCount())
			for range 3 {
				if _, err := e.Step(quadratic([]float64{1, 2, 3, 4, 5})); err != nil {
					t.Fatal(err)
				}
			}
			b, err := e.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			s, err := ReadSavedState(b)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.SecondMoments()
			if err != nil {
				t.Fatal(err)
			}
			var want [][]float32
			switch o := c.opt.(type) {
			case *Adam:
				want = o.v
			case *RAdaZO:
				want = o.v
			}
			if s.Step != 3 || !slices.Equal(s.Dims, []int{2, 3}) || s.Mode != Grouped || len(v) != 2 ||
				!slices.Equal(v[0], want[0]) || !slices.Equal(v[1], want[1]) || v[0][0] == 0 {
				t.Fatalf("saved %+v, v %v; want step 3, dims [2 3], v %v", s, v, want)
			}
		})
	}
	for _, k := range []uint8{0, 3} { // ZO-SGD, MEAZO
		b, _ := fuzzEngine(t, k).MarshalBinary()
		s, err := ReadSavedState(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SecondMoments(); err == nil || !strings.Contains(err.Error(), "keep") {
			t.Errorf("%s: %v, want a refusal", s.Optimizer, err)
		}
	}
	b, _ := fuzzEngine(t, 1).MarshalBinary()
	for _, bad := range [][]byte{nil, []byte("zo-engine"), b[:len(b)-3], append(slices.Clone(b), 0)} {
		if _, err := ReadSavedState(bad); err == nil {
			t.Errorf("ReadSavedState(%d bytes): no error", len(bad))
		}
	}
}
