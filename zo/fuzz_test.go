package zo

import (
	"bytes"
	"testing"
)

// fuzzEngine is a small engine of optimizer k (mod 5) over two groups, in
// grouped mode, after one step.
func fuzzEngine(t testing.TB, k uint8) *Engine {
	opt := []func() Optimizer{
		func() Optimizer { return NewSGD(0.1) },
		func() Optimizer { return NewAdam(0.1) },
		func() Optimizer { return NewRAdaZO(0.1) },
		func() Optimizer { return NewMEAZO(0.1) },
		func() Optimizer { return NewFZOO(0.1) },
	}[int(k)%5]()
	q := 1
	if opt.oneSided() {
		q = 2
	}
	e, err := New([][]float32{{1, 2}, {3, 4, 5}}, opt, Config{Eps: 1e-3, Q: q, Mode: Grouped, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(quadratic([]float64{1, 2, 3, 4, 5})); err != nil {
		t.Fatal(err)
	}
	return e
}

// FuzzEngineState: Engine.UnmarshalBinary on any bytes (a checkpoint's
// optimizer.bin) never panics, and a refused state leaves the engine as it
// was. (Its seeds run in every go test; make fuzz fuzzes it.)
func FuzzEngineState(f *testing.F) {
	for k := range uint8(5) {
		e := fuzzEngine(f, k)
		b, err := e.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		e.θ.(*hostParams).noise(e.StepCount()) // no draw left in flight
		f.Add(b, k)
		// The version 1 header: the step, without the mode and the groups' sizes.
		v1 := append([]byte(engineMagic1), b[len(engineMagic2):len(engineMagic2)+8]...)
		f.Add(append(v1, b[len(engineMagic2)+8+5+8*2:]...), k)
	}
	f.Add([]byte("zo-engine/2\x01\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff"), uint8(0))
	f.Fuzz(func(t *testing.T, state []byte, k uint8) {
		// The reader without an engine (meazo-plot vt-stats) takes what the
		// engine takes, and refuses the rest without a panic.
		saved, savedErr := ReadSavedState(state)
		e := fuzzEngine(t, k)
		defer e.θ.(*hostParams).noise(e.StepCount())
		before, _ := e.MarshalBinary()
		if err := e.UnmarshalBinary(state); err == nil && bytes.HasPrefix(state, []byte(engineMagic2)) &&
			(savedErr != nil || saved.Step != e.StepCount() || saved.Optimizer != e.opt.Name()) {
			t.Fatalf("the engine took the state (step %d, %s), ReadSavedState: %+v, %v", e.StepCount(), e.opt.Name(), saved, savedErr)
		}
		if err := e.UnmarshalBinary(state); err != nil {
			if after, _ := e.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("a refused state (%v) changed the engine's", err)
			}
			return
		}
		if _, err := e.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	})
}
