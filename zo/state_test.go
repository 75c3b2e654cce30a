package zo

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// The engine's saved state: what it holds, its bytes, its shape.

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
