package zo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// SavedState is what a saved engine state (Engine.MarshalBinary: a
// checkpoint's optimizer.bin) holds, read without an engine or a model: for
// tools that look inside a checkpoint (meazo-plot vt-stats) rather than
// resume from it.
type SavedState struct {
	Step      int         // updates made
	Mode      Mode        // how the groups were estimated
	Dims      []int       // every group's size
	Optimizer string      // the optimizer's name (Optimizer.Name)
	Scalars   []float64   // its float64 state (MEAZO: the units' v, …)
	Tensors   [][]float32 // its float32 state, in its order (ZO-Adam: m then v, per group)
}

// ReadSavedState reads a state Engine.MarshalBinary wrote (the format with
// the groups' sizes, written since checkpoints record them). A damaged or
// foreign file is an error, never a panic or an allocation larger than the
// file.
func ReadSavedState(b []byte) (*SavedState, error) {
	rest, ok := bytes.CutPrefix(b, []byte(engineMagic2))
	if !ok {
		if bytes.HasPrefix(b, []byte(engineMagic1)) {
			return nil, fmt.Errorf("zo engine state: an old format without the groups' sizes: resume the run once to rewrite it")
		}
		return nil, fmt.Errorf("zo engine state: bad header")
	}
	r := &stateReader{b: rest}
	s := &SavedState{}
	step := r.u64("step")
	if h := r.take(5, "mode and group count"); h != nil {
		s.Mode = Mode(h[0])
		n := uint64(binary.LittleEndian.Uint32(h[1:]))
		if n > uint64(len(r.b))/8 {
			r.err = fmt.Errorf("%d groups: longer than the file", n)
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			if d := r.u64("group sizes"); d > math.MaxInt && r.err == nil {
				r.err = fmt.Errorf("group size %d out of range", d)
			} else {
				s.Dims = append(s.Dims, int(d))
			}
		}
	}
	if r.err == nil && step > math.MaxUint32 {
		r.err = fmt.Errorf("step %d out of range", step)
	}
	s.Step = int(step)
	if r.err != nil {
		return nil, fmt.Errorf("zo engine state: %w", r.err)
	}
	var err error
	s.Optimizer, s.Scalars, s.Tensors, err = readOptimizerState(r.b)
	if err != nil {
		return nil, fmt.Errorf("zo engine state: %w", err)
	}
	return s, nil
}

// readOptimizerState reads marshalState's format whatever the optimizer,
// checking every length against the bytes left before allocating.
func readOptimizerState(b []byte) (name string, f64 []float64, f32 [][]float32, err error) {
	r := &stateReader{b: b}
	if string(r.take(uint64(len(stateMagic)), "magic")) != stateMagic && r.err == nil {
		r.err = fmt.Errorf("not optimizer state (bad magic)")
	}
	if nb := r.take(4, "name length"); nb != nil {
		name = string(r.take(uint64(binary.LittleEndian.Uint32(nb)), "name"))
	}
	if n := r.u64("scalar count"); r.err == nil {
		if n > uint64(len(r.b))/8 {
			r.err = fmt.Errorf("%d scalars: longer than the file", n)
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			f64 = append(f64, math.Float64frombits(r.u64("scalars")))
		}
	}
	if n := r.u64("tensor count"); r.err == nil {
		if n > uint64(len(r.b))/8 {
			r.err = fmt.Errorf("%d tensors: longer than the file", n)
		}
		for k := uint64(0); k < n && r.err == nil; k++ {
			m := r.u64("tensor length")
			if m > uint64(len(r.b))/4 {
				r.err = fmt.Errorf("tensor %d: %d values, longer than the file", k, m)
				break
			}
			data := r.take(4*m, fmt.Sprintf("tensor %d", k))
			if data == nil {
				break
			}
			t := make([]float32, m)
			for i := range t {
				t[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			f32 = append(f32, t)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return "", nil, nil, fmt.Errorf("%s state: %w", name, r.err)
	}
	return name, f64, f32, nil
}

// ErrExternalMoments is SavedState.SecondMoments' error for an engine whose
// per-coordinate state a Store keeps (a full-parameter run: its checkpoint's
// optimizer_state.safetensors, fullparam.StateFile), not the optimizer.
var ErrExternalMoments = errors.New("no per-coordinate moments here: the engine's Store keeps them (a full-parameter run's optimizer_state.safetensors)")

// SecondMoments returns the per-coordinate second moment v of ZO-Adam or
// R-AdaZO, one slice per group, as the last update left it (uncorrected: the
// v the update divides by is v/(1-β2^t) for ZO-Adam, v itself for R-AdaZO
// without bias correction). Other optimizers keep no such vector: MEAZO
// keeps one scalar per group (its v_t is in metrics.jsonl), ZO-SGD and FZOO
// none.
func (s *SavedState) SecondMoments() ([][]float32, error) {
	switch s.Optimizer {
	case "zo-adam", "radazo":
	case "meazo":
		return nil, fmt.Errorf("MEAZO keeps one second-moment scalar per group, not one per coordinate (its v_t over training: meazo-plot vt)")
	default:
		return nil, fmt.Errorf("optimizer %q keeps no second moment (only zo-adam and radazo keep one per coordinate)", s.Optimizer)
	}
	// ZO-Adam with β1 = 0 keeps no m: the state is v alone; otherwise m, then v.
	g := len(s.Dims)
	if len(s.Tensors) == 0 && g > 0 {
		return nil, fmt.Errorf("%s state: %w", s.Optimizer, ErrExternalMoments)
	}
	if len(s.Tensors) != g && len(s.Tensors) != 2*g {
		return nil, fmt.Errorf("%s state: %d tensors for %d groups", s.Optimizer, len(s.Tensors), g)
	}
	v := s.Tensors[len(s.Tensors)-g:]
	for i, t := range v {
		if len(t) != s.Dims[i] {
			return nil, fmt.Errorf("%s state: v of group %d has %d values, the group %d", s.Optimizer, i, len(t), s.Dims[i])
		}
	}
	return v, nil
}
