package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tensor is a tensor to write: raw little-endian Data of Dtype, row-major,
// or, when Produce is set, the bytes Produce writes (exactly the size Dtype
// and Shape give): a tensor too large to hold in memory a second time (a
// model's weights, read back from a GPU) is made while the file is written.
type Tensor struct {
	Name    string
	Dtype   Dtype
	Shape   []int
	Data    []byte
	Produce func(w io.Writer) error
}

// size is the number of bytes the tensor takes in the file.
func (t Tensor) size() int64 {
	if t.Produce != nil {
		n, _ := byteSize(t.Dtype, t.Shape)
		return n
	}
	return int64(len(t.Data))
}

// F32Tensor packs float32 values. WriteFile checks len(v) against shape.
func F32Tensor(name string, shape []int, v []float32) Tensor {
	return encoded(name, shape, v, F32)
}

// encoded is a tensor of v's values stored as d (F32, BF16 or F16).
func encoded(name string, shape []int, v []float32, d Dtype) Tensor {
	b := make([]byte, d.Size()*len(v))
	Encode(b, v, d)
	return Tensor{Name: name, Dtype: d, Shape: slices.Clone(shape), Data: b}
}

// Encode writes v's values into dst as a file of dtype d stores them (F32;
// BF16 and F16 rounded as BF16Tensor and F16Tensor round) and returns the
// number of bytes written, d.Size()·len(v), which dst must hold: for a
// tensor produced piece by piece (Tensor.Produce). It panics on another
// dtype.
func Encode(dst []byte, v []float32, d Dtype) int {
	dst = dst[:d.Size()*len(v)]
	switch d {
	case F32:
		for i, x := range v {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	case BF16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(dst[2*i:], float32ToBF16(x))
		}
	case F16:
		for i, x := range v {
			binary.LittleEndian.PutUint16(dst[2*i:], Float16Bits(x))
		}
	default:
		panic("safetensors.Encode: no float32 encoding to " + string(d))
	}
	return len(dst)
}

// F64Tensor packs float64 values.
func F64Tensor(name string, shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{Name: name, Dtype: F64, Shape: slices.Clone(shape), Data: b}
}

// I64Tensor packs int64 values.
func I64Tensor(name string, shape []int, v []int64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{Name: name, Dtype: I64, Shape: slices.Clone(shape), Data: b}
}

// BF16Tensor rounds float32 values to bfloat16, to nearest with ties to even
// (as torch's .to(torch.bfloat16) does); NaN stays NaN.
func BF16Tensor(name string, shape []int, v []float32) Tensor {
	return encoded(name, shape, v, BF16)
}

// RoundBF16 is x rounded to bfloat16 as BF16Tensor stores it (to nearest,
// ties to even), back in float32: the value a BF16 checkpoint holds for x.
func RoundBF16(x float32) float32 { return bf16ToFloat32(float32ToBF16(x)) }

func float32ToBF16(x float32) uint16 {
	u := math.Float32bits(x)
	if x != x { // NaN: keep the sign, force a quiet NaN that survives truncation
		return uint16(u>>16) | 0x40
	}
	// Add 0x7fff plus the lowest kept bit, then truncate: round half to even.
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16Tensor rounds float32 values to IEEE half precision (float16), to
// nearest with ties to even, as torch's .to(torch.float16) and numpy do:
// beyond 65504 a value becomes infinity, below 2⁻²⁴ it becomes a
// subnormal or zero; NaN stays NaN.
func F16Tensor(name string, shape []int, v []float32) Tensor {
	return encoded(name, shape, v, F16)
}

// RoundF16 is x rounded to float16 as F16Tensor stores it, back in
// float32: the value an F16 checkpoint holds for x.
func RoundF16(x float32) float32 { return f16ToFloat32(Float16Bits(x)) }

// Float16Bits is the IEEE half nearest x (ties to even), as its 16 bits;
// a NaN keeps its sign and the top of its payload, and stays a NaN.
func Float16Bits(x float32) uint16 {
	u := math.Float32bits(x)
	sign := uint16(u>>16) & 0x8000
	exp, mant := int(u>>23)&0xff, u&0x7fffff
	if exp == 0xff { // infinity, or NaN made quiet so that it stays one
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // half's biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e >= 1 { // a normal half: keep 10 of the 23 bits; a carry may step the exponent, up to infinity
		return sign | roundShift(uint32(e)<<10|mant>>13, mant&0x1fff, 13)
	}
	// A subnormal half (or zero): units of 2⁻²⁴, the implicit bit included.
	shift := 14 - e
	if shift > 24 { // below 2⁻²⁵, the midpoint of 0 and the least subnormal
		return sign
	}
	full := 1<<23 | mant
	return sign | roundShift(full>>shift, full&(1<<shift-1), shift)
}

// roundShift rounds kept, the value's bits above a shift of s bits, by
// rest, the s bits below: up past the midpoint, and at it to even.
func roundShift(kept, rest uint32, s int) uint16 {
	half := uint32(1) << (s - 1)
	if rest > half || rest == half && kept&1 == 1 {
		kept++
	}
	return uint16(kept)
}

// WriteFile writes tensors (any order; they are stored sorted by name) and
// metadata (may be nil) to path atomically: a temporary file in the same
// directory is written, synced and renamed over path.
//
// The layout is what HF's safetensors writes: header keys __metadata__ first
// then tensors sorted by name, data in the same order, the JSON compact and
// padded with spaces to a multiple of 8 bytes.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	fail := func(err error) error { return fmt.Errorf("write safetensors %s: %w", path, err) }
	sorted := slices.Clone(tensors)
	slices.SortFunc(sorted, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
	head, err := encodeHeader(sorted, metadata)
	if err != nil {
		return fail(err)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fail(err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(head)))
	w.Write(prefix[:])
	w.Write(head)
	for _, t := range sorted {
		if err := writeData(w, t); err != nil {
			return fail(fmt.Errorf("tensor %q: %w", t.Name, err))
		}
	}
	err = errors.Join(w.Flush(), tmp.Chmod(0o644), tmp.Sync(), tmp.Close())
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	ok = true
	syncDir(filepath.Dir(path))
	return nil
}

// writeData writes t's bytes: Data, or what Produce writes, which must be
// the size its dtype and shape give.
func writeData(w io.Writer, t Tensor) error {
	if t.Produce == nil {
		_, err := w.Write(t.Data)
		return err
	}
	cw := &countingWriter{w: w}
	if err := t.Produce(cw); err != nil {
		return err
	}
	if cw.n != t.size() {
		return fmt.Errorf("produced %d bytes, its dtype and shape take %d", cw.n, t.size())
	}
	return nil
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// syncDir makes a rename durable where the platform allows it (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// encodeHeader checks the (name-sorted) tensors and returns the padded JSON header.
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		h.WriteString(`"` + metadataKey + `":{`)
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			if i > 0 {
				h.WriteByte(',')
			}
			if !utf8.ValidString(k) || !utf8.ValidString(metadata[k]) {
				return nil, fmt.Errorf("metadata %q: not valid UTF-8", k)
			}
			writeJSONString(&h, k)
			h.WriteByte(':')
			writeJSONString(&h, metadata[k])
		}
		h.WriteByte('}')
	}
	var offset int64
	for i, t := range tensors {
		if err := checkTensor(t); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if i > 0 && t.Name == tensors[i-1].Name {
			return nil, fmt.Errorf("tensor %q: given twice", t.Name)
		}
		if h.Len() > 1 {
			h.WriteByte(',')
		}
		writeJSONString(&h, t.Name)
		h.WriteString(`:{"dtype":`)
		writeJSONString(&h, string(t.Dtype))
		h.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		end := offset + t.size()
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, offset, end)
		offset = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	if h.Len() > maxHeaderLen {
		return nil, fmt.Errorf("header of %d bytes exceeds the %d-byte limit", h.Len(), maxHeaderLen)
	}
	return h.Bytes(), nil
}

// checkTensor checks that a tensor to write is well formed.
func checkTensor(t Tensor) error {
	switch {
	case t.Name == metadataKey:
		return fmt.Errorf("the name %s is reserved", metadataKey)
	case !utf8.ValidString(t.Name):
		return fmt.Errorf("name is not valid UTF-8")
	case !t.Dtype.Valid():
		return fmt.Errorf("unknown dtype %q", t.Dtype)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("shape %v has a negative dimension", t.Shape)
		}
	}
	n, ok := byteSize(t.Dtype, t.Shape)
	if !ok {
		return fmt.Errorf("shape %v of %s overflows the byte size", t.Shape, t.Dtype)
	}
	if t.Produce == nil && n != int64(len(t.Data)) {
		return fmt.Errorf("dtype %s shape %v needs %d bytes but Data has %d", t.Dtype, t.Shape, n, len(t.Data))
	}
	return nil
}

// writeJSONString writes s as a JSON string without HTML escaping, as serde_json does.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // cannot fail for a string
	b.Truncate(b.Len() - 1) // Encode appends a newline
}
