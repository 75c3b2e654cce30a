package zo

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Optimizer state is serialised as: the magic "zo-state", the optimizer's
// name (uint32 length + bytes), a float64 vector (uint64 length + values),
// then a count of float32 tensors, each as uint64 length + values; all
// little-endian. Values are stored bit-exactly.
const stateMagic = "zo-state"

func marshalState(name string, f64 []float64, f32 ...[][]float32) []byte {
	b := []byte(stateMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f64)))
	for _, x := range f64 {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	var tensors [][]float32
	for _, set := range f32 {
		tensors = append(tensors, set...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(tensors)))
	for _, t := range tensors {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(t)))
		for _, x := range t {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// stateReader reads the format above, remembering the first error.
type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) take(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = fmt.Errorf("truncated at %s", what)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *stateReader) u64(what string) uint64 {
	if b := r.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// unmarshalState restores state written by marshalState into the existing
// f64 and f32 slices, which must have the saved lengths. It is all or
// nothing: b is checked whole before any value is written, so a refused
// state leaves the optimizer as it was.
func unmarshalState(b []byte, name string, f64 []float64, f32 ...[][]float32) error {
	if err := decodeState(b, name, false, f64, f32...); err != nil {
		return err
	}
	return decodeState(b, name, true, f64, f32...)
}

// decodeState reads b as unmarshalState describes, writing the values into
// f64 and f32 only when write is set.
func decodeState(b []byte, name string, write bool, f64 []float64, f32 ...[][]float32) error {
	r := &stateReader{b: b}
	if string(r.take(uint64(len(stateMagic)), "magic")) != stateMagic && r.err == nil {
		r.err = fmt.Errorf("not optimizer state (bad magic)")
	}
	if nb := r.take(4, "name length"); nb != nil {
		if got := string(r.take(uint64(binary.LittleEndian.Uint32(nb)), "name")); r.err == nil && got != name {
			r.err = fmt.Errorf("state is for optimizer %q, not %q", got, name)
		}
	}
	if n := r.u64("scalar count"); r.err == nil && n != uint64(len(f64)) {
		r.err = fmt.Errorf("state has %d scalars, optimizer has %d", n, len(f64))
	}
	for i := range f64 {
		if x := math.Float64frombits(r.u64("scalars")); write {
			f64[i] = x
		}
	}
	var tensors [][]float32
	for _, set := range f32 {
		tensors = append(tensors, set...)
	}
	if n := r.u64("tensor count"); r.err == nil && n != uint64(len(tensors)) {
		r.err = fmt.Errorf("state has %d tensors, optimizer has %d", n, len(tensors))
	}
	for k, t := range tensors {
		if n := r.u64("tensor length"); r.err == nil && n != uint64(len(t)) {
			r.err = fmt.Errorf("state tensor %d has %d values, optimizer has %d", k, n, len(t))
		}
		data := r.take(4*uint64(len(t)), fmt.Sprintf("tensor %d", k))
		for i := range t {
			if data != nil && write {
				t[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%s state: %w", name, r.err)
	}
	return nil
}
