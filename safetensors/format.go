// Package safetensors reads and writes HuggingFace .safetensors files.
//
// A safetensors file is
//
//	8 bytes   N, the header length, little-endian uint64
//	N bytes   a JSON object: {"__metadata__": {string: string}, "<tensor>": {"dtype", "shape", "data_offsets"}, ...}
//	rest      the data section; data_offsets [begin, end) are byte offsets into it
//
// Nothing in a file is trusted before the header has been validated (see
// parseHeader): a malformed or hostile file gives one error naming the file
// and the tensor, never a panic or an out-of-range read.
//
// Validation follows the official Rust crate (huggingface/safetensors,
// Metadata::validate and SafeTensors::read_metadata): the tensors, sorted by
// offset, must tile the data section exactly, starting at 0 with no gap and no
// overlap, and the last one must end at the end of the file. That is stricter
// than "every tensor lies inside the file", and it is what the Python and Rust
// loaders enforce, so a file we accept is a file HF accepts too.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/clip"
)

// Dtype is an element type, spelled as in the format ("F32", "BF16", ...).
type Dtype string

// The element types this package knows. Sub-byte types (F4, F6_E2M3, F6_E3M2)
// are not supported: a file using them is rejected with a clear error.
const (
	BOOL    Dtype = "BOOL"
	U8      Dtype = "U8"
	I8      Dtype = "I8"
	F8_E5M2 Dtype = "F8_E5M2"
	F8_E4M3 Dtype = "F8_E4M3"
	F8_E8M0 Dtype = "F8_E8M0"
	I16     Dtype = "I16"
	U16     Dtype = "U16"
	F16     Dtype = "F16"
	BF16    Dtype = "BF16"
	I32     Dtype = "I32"
	U32     Dtype = "U32"
	F32     Dtype = "F32"
	F64     Dtype = "F64"
	I64     Dtype = "I64"
	U64     Dtype = "U64"
	C64     Dtype = "C64"
)

// dtypeSizes is the element size in bytes of every supported dtype.
var dtypeSizes = map[Dtype]int{
	BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	F64: 8, I64: 8, U64: 8, C64: 8,
}

// Size is the element size in bytes, or 0 for an unknown dtype.
func (d Dtype) Size() int { return dtypeSizes[d] }

// Valid reports whether the package knows d.
func (d Dtype) Valid() bool { return d.Size() > 0 }

// TensorInfo describes one tensor of a file. Begin and End are byte offsets
// into the data section (they do not count the 8-byte prefix and the header).
type TensorInfo struct {
	Name       string
	Dtype      Dtype
	Shape      []int
	Begin, End int64
}

// NumElements is the product of the shape (1 for a scalar).
func (t TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// maxHeaderLen is the official crate's limit (MAX_HEADER_SIZE = 100_000_000).
const maxHeaderLen = 100_000_000

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// header is a parsed and validated header.
type header struct {
	tensors  []TensorInfo // in data-offset order
	metadata map[string]string
}

// parseFile validates the 8-byte prefix of buf (a whole file) and parses its
// header. It returns the header and the offset where the data section starts.
// path is only used in error messages.
func parseFile(path string, buf []byte) (header, int64, error) {
	size := int64(len(buf))
	if size < 8 {
		return header{}, 0, fmt.Errorf("safetensors %s: file is %d bytes, shorter than the 8-byte header length", path, size)
	}
	n := binary.LittleEndian.Uint64(buf[:8])
	if n > maxHeaderLen {
		return header{}, 0, fmt.Errorf("safetensors %s: header length %d exceeds the %d-byte limit", path, n, maxHeaderLen)
	}
	if n > uint64(size-8) {
		return header{}, 0, fmt.Errorf("safetensors %s: header length %d is past end of file (%d bytes after the length prefix): the file is truncated (an incomplete download or copy?) or not a safetensors file", path, n, size-8)
	}
	start := 8 + int64(n)
	h, err := parseHeader(path, buf[8:start], size-start)
	return h, start, err
}

// rawTensorInfo is one header entry as it appears in the JSON. Numbers are
// kept as json.Number so that negative, fractional and huge values get a
// precise error of our own instead of a generic decoding one.
type rawTensorInfo struct {
	Dtype       *string       `json:"dtype"`
	Shape       []json.Number `json:"shape"`
	DataOffsets []json.Number `json:"data_offsets"`
}

// parseHeader parses and validates the JSON header of a file whose data
// section is dataLen bytes long. On success every tensor has a known dtype, a
// shape of non-negative ints whose byte size does not overflow, offsets with
// end-begin == elements×dtype size, and the tensors sorted by offset tile
// [0, dataLen) exactly. Duplicate keys are rejected.
func parseHeader(path string, js []byte, dataLen int64) (header, error) {
	fail := func(format string, args ...any) (header, error) {
		return header{}, fmt.Errorf("safetensors %s: "+format, append([]any{path}, args...)...)
	}
	if !utf8.Valid(js) {
		return fail("header is not valid UTF-8")
	}
	// Like the official crate: the header must start with '{' (no leading
	// whitespace); trailing whitespace is the usual padding to 8 bytes.
	if len(js) == 0 || js[0] != '{' {
		return fail("header does not start with '{'")
	}

	// Counted before the parse, which takes tens of microseconds an entry:
	// a stranger's header of 1.7 million empty tensors took a minute and
	// a gigabyte to open.
	if n := bytes.Count(js, []byte(`"data_offsets"`)); n > maxTensors {
		return fail("header lists %d tensors, more than the %d any model file has", n, maxTensors)
	}
	entries, err := splitObject(js)
	if err != nil {
		return fail("header is not a valid JSON object: %v", err)
	}
	if len(entries) > maxTensors+1 { // the tensors and __metadata__
		return fail("header has %d entries, more than the %d tensors any model file has", len(entries), maxTensors)
	}

	var h header
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.key] {
			return fail("header has key %s twice", clip.Quote(e.key))
		}
		seen[e.key] = true
		if e.key == metadataKey {
			if err := decodeMetadata(e.value, &h.metadata); err != nil {
				return fail("%s must be an object of string values: %v", metadataKey, err)
			}
			continue
		}
		t, err := decodeTensorInfo(e.key, e.value)
		if err != nil {
			return fail("tensor %s: %v", clip.Quote(e.key), err)
		}
		h.tensors = append(h.tensors, t)
	}

	// Sort by offsets (name breaks ties between empty tensors), then check
	// that they tile the data section: each starts where the previous ended.
	slices.SortFunc(h.tensors, func(a, b TensorInfo) int {
		if c := cmpInt64(a.Begin, b.Begin); c != 0 {
			return c
		}
		if c := cmpInt64(a.End, b.End); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var prev *TensorInfo
	for i := range h.tensors {
		t := &h.tensors[i]
		if t.End > dataLen {
			return fail("tensor %s: data offsets [%d,%d) past end of file (%d bytes of data): the file is truncated (an incomplete download or copy?)", clip.Quote(t.Name), t.Begin, t.End, dataLen)
		}
		prevEnd := int64(0)
		if prev != nil {
			prevEnd = prev.End
		}
		switch {
		case t.Begin < prevEnd:
			return fail("tensor %s: data offsets [%d,%d) overlap tensor %s at [%d,%d)", clip.Quote(t.Name), t.Begin, t.End, clip.Quote(prev.Name), prev.Begin, prev.End)
		case t.Begin > prevEnd:
			return fail("tensor %s: data offsets [%d,%d) leave bytes [%d,%d) of the data section unused (it must be fully covered)", clip.Quote(t.Name), t.Begin, t.End, prevEnd, t.Begin)
		}
		prev = t
	}
	switch {
	case prev == nil && dataLen > 0:
		return fail("header has no tensors but the data section is %d bytes (it must be fully covered)", dataLen)
	case prev != nil && prev.End != dataLen:
		return fail("tensor %s: last tensor ends at %d but the data section is %d bytes (it must be fully covered)", clip.Quote(prev.Name), prev.End, dataLen)
	}
	return h, nil
}

// decodeTensorInfo checks one header entry on its own: dtype, shape and that
// the offsets hold exactly elements×dtype size bytes.
func decodeTensorInfo(name string, value []byte) (TensorInfo, error) {
	entries, err := splitObject(value)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("not a {dtype, shape, data_offsets} object: %v", err)
	}
	// The fields are HF's by their exact names, others ignored, as serde
	// reads them: a decoder into a struct would also take "DTYPE" or
	// "Shape" for them, and so read a file HF refuses, or one HF reads, as
	// another tensor. A field given twice is refused, as HF's parser does
	// (a decoder into a struct would keep the last one).
	fields := map[string]json.RawMessage{}
	for _, e := range entries {
		if _, twice := fields[e.key]; twice {
			return TensorInfo{}, fmt.Errorf("field %s given twice", clip.Quote(e.key))
		}
		fields[e.key] = e.value
		// A shape of millions of dimensions (a few bytes each in a
		// 100 MB header) would cost gigabytes to decode: refuse it
		// before it is (no tensor has more than a handful).
		if e.key == "shape" && bytes.Count(e.value, []byte(",")) >= maxDims {
			return TensorInfo{}, fmt.Errorf("shape has more than %d dimensions", maxDims)
		}
	}
	var raw rawTensorInfo
	for _, f := range []struct {
		key string
		dst any
	}{{"dtype", &raw.Dtype}, {"shape", &raw.Shape}, {"data_offsets", &raw.DataOffsets}} {
		v, ok := fields[f.key]
		if !ok {
			continue // missing: said below
		}
		if err := json.Unmarshal(v, f.dst); err != nil { // (numbers into json.Number: as written)
			return TensorInfo{}, fmt.Errorf("not a {dtype, shape, data_offsets} object: field %s: %v", f.key, err)
		}
	}
	if raw.Dtype == nil {
		return TensorInfo{}, fmt.Errorf("missing dtype")
	}
	if raw.Shape == nil {
		return TensorInfo{}, fmt.Errorf("missing shape")
	}
	if raw.DataOffsets == nil {
		return TensorInfo{}, fmt.Errorf("missing data_offsets")
	}
	t := TensorInfo{Name: name, Dtype: Dtype(*raw.Dtype)}
	if !t.Dtype.Valid() {
		return TensorInfo{}, fmt.Errorf("unknown dtype %s", clip.Quote(*raw.Dtype))
	}

	t.Shape = make([]int, len(raw.Shape))
	for i, num := range raw.Shape {
		// "-0" too: it is 0 to strconv, not an unsigned integer to the crate.
		d, err := strconv.ParseInt(num.String(), 10, 64)
		if err != nil || d < 0 || d > int64(maxInt) || strings.HasPrefix(num.String(), "-") {
			return TensorInfo{}, fmt.Errorf("shape %v: dimension %d is %s, not a non-negative integer", raw.Shape, i, num)
		}
		t.Shape[i] = int(d)
	}
	size, ok := byteSize(t.Dtype, t.Shape)
	if !ok {
		return TensorInfo{}, fmt.Errorf("shape %v of %s overflows the byte size", t.Shape, t.Dtype)
	}

	if len(raw.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("data_offsets %v must be [begin, end]", raw.DataOffsets)
	}
	var off [2]int64
	for i, num := range raw.DataOffsets {
		v, err := strconv.ParseInt(num.String(), 10, 64)
		if err != nil || v < 0 || strings.HasPrefix(num.String(), "-") {
			return TensorInfo{}, fmt.Errorf("data_offsets %v: %s is not a non-negative integer below 2^63", raw.DataOffsets, num)
		}
		off[i] = v
	}
	t.Begin, t.End = off[0], off[1]
	if t.End < t.Begin {
		return TensorInfo{}, fmt.Errorf("data offsets [%d,%d) end before they begin", t.Begin, t.End)
	}
	if t.End-t.Begin != size {
		return TensorInfo{}, fmt.Errorf("dtype %s shape %v needs %d bytes but data offsets [%d,%d) hold %d", t.Dtype, t.Shape, size, t.Begin, t.End, t.End-t.Begin)
	}
	return t, nil
}

const maxInt = int(^uint(0) >> 1)

// maxTensors is the most tensors a file may list: a model's shard holds
// hundreds to a few thousand (a whole 14B model about 400).
const maxTensors = 100_000

// maxDims is the most dimensions a tensor's shape may have (PyTorch's
// kernels handle at most 25; every tensor meazo reads has 1, 2 or 4).
const maxDims = 64

// byteSize is elements × dtype size for a shape of non-negative dims, checked
// for overflow the way the official crate does it (checked product of the
// dims, then × element size), and also bounded by 2^63-1 so offsets fit int64.
func byteSize(d Dtype, shape []int) (int64, bool) {
	numel := uint64(1)
	for _, dim := range shape {
		hi, lo := bits.Mul64(numel, uint64(dim))
		if hi != 0 {
			return 0, false
		}
		numel = lo
	}
	hi, size := bits.Mul64(numel, uint64(d.Size()))
	if hi != 0 || size > math.MaxInt64 {
		return 0, false
	}
	return int64(size), true
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// objectEntry is one key/value pair of a JSON object, value still undecoded.
type objectEntry struct {
	key   string
	value json.RawMessage
}

// decodeMetadata decodes __metadata__ into m: an object of strings, or
// null. A null value in it is refused, as HF's parser refuses it
// (encoding/json would read it as "").
func decodeMetadata(js []byte, m *map[string]string) error {
	if string(bytes.TrimSpace(js)) == "null" {
		return nil
	}
	entries, err := splitObject(js)
	if err != nil {
		return err
	}
	*m = make(map[string]string, len(entries))
	for _, e := range entries {
		var v string
		if !bytes.HasPrefix(bytes.TrimSpace(e.value), []byte(`"`)) || json.Unmarshal(e.value, &v) != nil {
			return fmt.Errorf("the value of %s is %.40s, not a string", clip.Quote(e.key), e.value)
		}
		(*m)[e.key] = v
	}
	return nil
}

// splitObject splits a JSON object into its entries in file order, keeping
// duplicate keys (a map would silently keep only the last one). Anything after
// the closing brace other than whitespace is an error.
func splitObject(js []byte) ([]objectEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var entries []objectEntry
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("value of %s: %v", clip.Quote(key), err)
		}
		entries = append(entries, objectEntry{key, value})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	if rest := js[dec.InputOffset():]; len(bytes.Trim(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("unexpected data after the object: %.20q", rest)
	}
	return entries, nil
}
