package fullparam

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
)

// StateFile is the name of the optimizer's per-coordinate state in a
// checkpoint directory: ZO-Adam's and R-AdaZO's moments, ZO-SGD's momentum.
const StateFile = "optimizer_state.safetensors"

// The state of tensor NAME is saved as NAME.m and NAME.v (the first and
// second moments; ZO-SGD's momentum buffer is its m), float32 in the
// tensor's shape.
const (
	mSuffix = ".m"
	vSuffix = ".v"
)

// HasState says whether the optimizer has per-coordinate state to save.
func (p *Params) HasState() bool {
	for _, st := range p.state {
		if st.m != nil || st.v != nil || st.mv != nil || st.vv != nil {
			return true
		}
	}
	return false
}

// StateBytes is the size of the optimizer's per-coordinate state now on
// the backend (float32 moments).
func (p *Params) StateBytes() int64 {
	var n int64
	for i, st := range p.state {
		size := int64(p.tensors[i].Size()) * 4
		for _, held := range []bool{st.m != nil, st.v != nil, st.mv != nil, st.vv != nil} {
			if held {
				n += size
			}
		}
	}
	return n
}

// SaveState writes the optimizer's per-coordinate state into the file
// path (safetensors, float32), read back from the backend a piece at a
// time while the file is written.
func (p *Params) SaveState(path string) error {
	var out []safetensors.Tensor
	for i, st := range p.state {
		t, shape := p.tensors[i], p.shape(i)
		add := func(suffix string, w tensor.Weight, b tensor.Buf) {
			if w == nil && b == nil {
				return
			}
			out = append(out, safetensors.Tensor{Name: t.Name + suffix, Dtype: safetensors.F32, Shape: shape,
				Produce: func(wr io.Writer) error { return p.writeState(wr, w, b, t.Rows, t.Cols) }})
		}
		add(mSuffix, st.m, st.mv)
		add(vSuffix, st.v, st.vv)
	}
	return safetensors.WriteFile(path, out, map[string]string{"format": "pt"})
}

// writeState writes a state matrix w (rows × cols) or vector b as float32.
func (p *Params) writeState(wr io.Writer, w tensor.Weight, b tensor.Buf, rows, cols int) (err error) {
	defer tensor.Recover(&err)
	be := p.m.Backend
	if b != nil {
		return writeF32(wr, be.ToHost(b)[:cols])
	}
	chunk := max(1, (4<<20)/cols)
	buf := be.Alloc(min(chunk, rows) * cols)
	defer be.Free(buf)
	for lo := 0; lo < rows; lo += chunk {
		hi := min(rows, lo+chunk)
		ids := make([]int, hi-lo)
		for i := range ids {
			ids[i] = lo + i
		}
		dst := buf.Slice(0, (hi-lo)*cols)
		be.Rows(dst, w, ids)
		if err := writeF32(wr, be.ToHost(dst)); err != nil {
			return err
		}
	}
	return nil
}

func writeF32(w io.Writer, v []float32) error {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	_, err := w.Write(b)
	return err
}

// LoadState reads the state SaveState wrote into path back onto the
// backend; a missing file is no state. Every tensor in the file must be the
// state of a trained tensor of this shape.
func (p *Params) LoadState(path string) (err error) {
	defer tensor.Recover(&err)
	f, err := safetensors.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	byName := map[string]int{}
	for _, g := range p.groups {
		for _, i := range g.tensors {
			byName[p.tensors[i].Name] = i
		}
	}
	for _, info := range f.Tensors() {
		name, isM := strings.CutSuffix(info.Name, mSuffix)
		if !isM {
			name, _ = strings.CutSuffix(info.Name, vSuffix)
		}
		i, ok := byName[name]
		if !ok || name == info.Name || !slices.Equal(info.Shape, p.shape(i)) {
			return fmt.Errorf("%s: %s %v is not the state of a trained tensor of this run", path, info.Name, info.Shape)
		}
		v, err := f.Float32(info.Name)
		if err != nil {
			return err
		}
		p.setState(i, isM, v)
		f.Release(info.Name) // a model-sized state (ZO-Adam's: twice the weights) is never resident as a file too
	}
	return nil
}

// setState puts the values v of tensor i's m (or v) on the backend.
func (p *Params) setState(i int, isM bool, v []float32) {
	be, t, st := p.m.Backend, p.tensors[i], &p.state[i]
	if t.Vector != nil {
		if isM {
			st.mv = be.FromHost(v)
		} else {
			st.vv = be.FromHost(v)
		}
		return
	}
	w := be.Pack(v, t.Rows, t.Cols, false)
	if isM {
		st.m = w
	} else {
		st.v = w
	}
}

// shape is tensor i's shape as saved.
func (p *Params) shape(i int) []int {
	if t := p.tensors[i]; t.Vector == nil {
		return []int{t.Rows, t.Cols}
	}
	return []int{p.tensors[i].Cols}
}

// ReadSecondMoments calls fn with the second moment v of every tensor in the
// state file path (SaveState's: NAME.v, float32), one tensor at a time in the
// file's order, without a model or a backend: for tools that look inside a
// checkpoint (meazo-plot vt-stats). Each tensor's mapped pages are released
// once it is copied out, so a model-sized state is never resident at once. A file that
// holds anything but NAME.m and NAME.v in float32 is an error; a missing one
// is fs.ErrNotExist.
func ReadSecondMoments(path string, fn func(name string, v []float32) error) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, info := range f.Tensors() {
		name, isV := strings.CutSuffix(info.Name, vSuffix)
		_, isM := strings.CutSuffix(info.Name, mSuffix)
		switch {
		case !isV && !isM || name == "":
			return fmt.Errorf("%s: %s is not an optimizer state (NAME%s or NAME%s)", path, info.Name, mSuffix, vSuffix)
		case info.Dtype != safetensors.F32:
			return fmt.Errorf("%s: %s is %s, not the F32 SaveState writes", path, info.Name, info.Dtype)
		case isM:
			continue
		}
		v, err := f.Float32(info.Name)
		if err != nil {
			return err
		}
		f.Release(info.Name)
		if err := fn(name, v); err != nil {
			return err
		}
	}
	return nil
}
