package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fileBytes builds a file from a header (unpadded) and a data section.
func fileBytes(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// writeBytes writes b to a fresh file and returns its path.
func writeBytes(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenMalformed: every malformed file gives one error naming the file and
// the problem (and the tensor, where there is one).
func TestOpenMalformed(t *testing.T) {
	valid := fileBytes(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, make([]byte, 16))
	withLen := func(n uint64, rest string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
	}
	f32 := func(name string, shape string, begin, end int) string {
		return `"` + name + `":{"dtype":"F32","shape":` + shape + `,"data_offsets":[` + strconv.Itoa(begin) + `,` + strconv.Itoa(end) + `]}`
	}
	for _, tc := range []struct {
		name string
		file []byte
		want []string // substrings of the error, besides the path
	}{
		{"empty file", nil, []string{"file is 0 bytes"}},
		{"truncated prefix", []byte{8, 0, 0}, []string{"file is 3 bytes", "8-byte header length"}},
		{"truncated data", valid[:len(valid)-4], []string{`tensor "b"`, "data offsets [8,16) past end of file (12 bytes of data): the file is truncated"}},
		{"header length past end", withLen(1000, `{}`), []string{"header length 1000 is past end of file (2 bytes"}},
		{"header too large", withLen(200_000_000, `{}`), []string{"header length 200000000 exceeds the 100000000-byte limit"}},
		{"offsets past end", fileBytes(`{`+f32("model.norm.weight", "[4]", 0, 16)+`}`, make([]byte, 8)),
			[]string{`tensor "model.norm.weight": data offsets [0,16) past end of file (8 bytes of data)`}},
		{"overlapping tensors", fileBytes(`{`+f32("a", "[4]", 0, 16)+`,`+f32("b", "[4]", 8, 24)+`}`, make([]byte, 24)),
			[]string{`tensor "b": data offsets [8,24) overlap tensor "a" at [0,16)`}},
		{"same offsets", fileBytes(`{`+f32("a", "[2]", 0, 8)+`,`+f32("b", "[2]", 0, 8)+`}`, make([]byte, 8)),
			[]string{`tensor "b"`, `overlap tensor "a"`}},
		{"gap between tensors", fileBytes(`{`+f32("a", "[2]", 0, 8)+`,`+f32("b", "[2]", 12, 20)+`}`, make([]byte, 20)),
			[]string{`tensor "b"`, "leave bytes [8,12)", "fully covered"}},
		{"first tensor not at 0", fileBytes(`{`+f32("a", "[2]", 4, 12)+`}`, make([]byte, 12)),
			[]string{`tensor "a"`, "leave bytes [0,4)"}},
		{"trailing data bytes", fileBytes(`{`+f32("a", "[2]", 0, 8)+`}`, make([]byte, 12)),
			[]string{`tensor "a": last tensor ends at 8 but the data section is 12 bytes`, "fully covered"}},
		{"no tensors but data", fileBytes(`{}`, make([]byte, 4)), []string{"no tensors", "4 bytes"}},
		{"wrong byte length", fileBytes(`{`+f32("w", "[2,3]", 0, 20)+`}`, make([]byte, 20)),
			[]string{`tensor "w": dtype F32 shape [2 3] needs 24 bytes but data offsets [0,20) hold 20`}},
		{"reversed offsets", fileBytes(`{`+f32("w", "[0]", 8, 0)+`}`, make([]byte, 8)),
			[]string{`tensor "w": data offsets [8,0) end before they begin`}},
		{"unknown dtype", fileBytes(`{"w":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": unknown dtype "F31"`}},
		{"sub-byte dtype", fileBytes(`{"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, make([]byte, 1)),
			[]string{`tensor "w": unknown dtype "F4"`}},
		{"dtype not a string", fileBytes(`{"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": not a {dtype, shape, data_offsets} object`}},
		{"missing dtype", fileBytes(`{"w":{"shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": missing dtype`}},
		{"missing shape", fileBytes(`{"w":{"dtype":"F32","data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": missing shape`}},
		// Millions of dimensions cost gigabytes to decode (2.8 GB for 49 M in a 98 MB header): refused unread.
		{"too many dimensions", fileBytes(`{`+f32("w", "["+strings.Repeat("1,", 64)+"1]", 0, 4)+`}`, make([]byte, 4)),
			[]string{`tensor "w": shape has more than 64 dimensions`}},
		{"missing offsets", fileBytes(`{"w":{"dtype":"F32","shape":[1]}}`, make([]byte, 4)),
			[]string{`tensor "w": missing data_offsets`}},
		{"three offsets", fileBytes(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, make([]byte, 4)),
			[]string{`tensor "w": data_offsets [0 4 8] must be [begin, end]`}},
		{"negative offset", fileBytes(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, make([]byte, 4)),
			[]string{`tensor "w": data_offsets [-4 0]: -4 is not a non-negative integer`}},
		{"bad JSON", fileBytes(`{"w":{"dtype":"F32",`, nil), []string{"header is not a valid JSON object"}},
		{"header not an object", fileBytes(`[1,2]   `, nil), []string{"header does not start with '{'"}},
		{"leading space", fileBytes(` {}`, nil), []string{"header does not start with '{'"}},
		{"garbage after object", fileBytes(`{}x`, nil), []string{"header is not a valid JSON object", "unexpected data after the object"}},
		{"invalid UTF-8", fileBytes("{\"w\xff\":{}}", nil), []string{"header is not valid UTF-8"}},
		{"negative shape", fileBytes(`{"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "w": shape [2 -1]: dimension 1 is -1, not a non-negative integer`}},
		{"fractional shape", fileBytes(`{"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,6]}}`, make([]byte, 6)),
			[]string{`tensor "w": shape [1.5]: dimension 0 is 1.5`}},
		{"overflowing shape", fileBytes(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "w": shape [4294967296 4294967296] of F32 overflows the byte size`}},
		{"overflow before a zero dim", fileBytes(`{"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil),
			[]string{`tensor "w"`, "overflows"}},
		{"duplicate tensor", fileBytes(`{`+f32("a", "[2]", 0, 8)+`,`+f32("a", "[2]", 8, 16)+`}`, make([]byte, 16)),
			[]string{`header has key "a" twice`}},
		{"a field given twice", fileBytes(`{"x":{"dtype":"F32","shape":[2],"shape":[1,2],"data_offsets":[0,8]}}`, make([]byte, 8)),
			[]string{`tensor "x"`, `field "shape" given twice`}},
		{"metadata not strings", fileBytes(`{"__metadata__":{"format":1}}`, nil), []string{"__metadata__ must be an object of string values"}},
		// HF's parser refuses a null value (encoding/json read it as "").
		{"metadata value null", fileBytes(`{"__metadata__":{"format":"pt","x":null}}`, nil),
			[]string{"__metadata__ must be an object of string values", `the value of "x" is null, not a string`}},
		// HF reads fields by their exact names: "DTYPE" is no dtype (encoding/json took it for one).
		{"fields in capitals", fileBytes(`{"w":{"DTYPE":"F32","Shape":[1],"Data_Offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": missing dtype`}},
		// A name of megabytes is quoted in part, with its length.
		{"dtype of 1 MiB", fileBytes(`{"w":{"dtype":"`+strings.Repeat("F", 1<<20)+`","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)),
			[]string{`tensor "w": unknown dtype "FFFFFFFF`, `F"… (1048576 bytes)`}},
		{"tensor name of 1 MiB", fileBytes(`{`+f32(strings.Repeat("é", 1<<19), "[2]", 0, 12)+`}`, make([]byte, 12)),
			[]string{`tensor "ééé`, `é"… (1048576 bytes): dtype F32 shape [2] needs 8 bytes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeBytes(t, tc.file)
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatal("Open succeeded, want an error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "safetensors "+path+": ") {
				t.Errorf("error %q does not start with the file", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is more than one line", msg)
			}
			if len(msg) > 1000 {
				t.Errorf("error of %d bytes, beginning %.300q", len(msg), msg)
			}
		})
	}
	// The valid file the cases above break is itself accepted.
	f, err := Open(writeBytes(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestOpenNotAFile: a missing path or a directory is an error naming it.
func TestOpenNotAFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.safetensors"), "no such file"},
		{dir, "not a regular file"},
	} {
		_, err := Open(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v, want an error naming it and saying %q", tc.path, err, tc.want)
		}
	}
}

// TestOpenAccepts covers valid corner cases the official crate accepts too.
func TestOpenAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   []byte
		tensor []string // expected Tensors() order
	}{
		{"empty header", fileBytes(`{}`, nil), nil},
		{"metadata only", fileBytes(`{"__metadata__":{"format":"pt"}}`, nil), nil},
		{"padding with whitespace", fileBytes("{}  \t\n", nil), nil},
		{"scalar and empty tensors", fileBytes(`{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},`+
			`"e":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},"d":{"dtype":"I8","shape":[0],"data_offsets":[8,8]},`+
			`"z":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}}`, make([]byte, 10)), []string{"s", "d", "e", "z"}},
		{"header order is not offset order", fileBytes(`{"b":{"dtype":"I16","shape":[1],"data_offsets":[2,4]},`+
			`"a":{"dtype":"I16","shape":[1],"data_offsets":[0,2]}}`, make([]byte, 4)), []string{"a", "b"}},
		{"unknown fields ignored", fileBytes(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1]}}`, make([]byte, 1)), []string{"a"}},
		// Read by their exact names: U8 [1], as HF reads it (the capitals once made it F16 [4], 8 bytes the file has not).
		{"fields in capitals ignored", fileBytes(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"DTYPE":"F16","SHAPE":[4]}}`, make([]byte, 1)), []string{"a"}},
		{"metadata null", fileBytes(`{"__metadata__":null}`, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(writeBytes(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var names []string
			for _, info := range f.Tensors() {
				names = append(names, info.Name)
			}
			if !slices.Equal(names, tc.tensor) {
				t.Errorf("tensors %v, want %v", names, tc.tensor)
			}
		})
	}
}

// FuzzParseHeader feeds arbitrary headers (and data lengths) to the parser:
// it must never panic, and an accepted header must satisfy the invariants the
// readers rely on.
func FuzzParseHeader(f *testing.F) {
	for _, seed := range []struct {
		header  string
		dataLen int64
	}{
		{`{}`, 0},
		{`{"__metadata__":{"format":"pt"}}`, 0},
		{`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2,1],"data_offsets":[8,12]}}`, 12},
		{`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}`, 24},
		{`{"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, 8},
		{`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4},
		{`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, 0},
		{`{"w":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}}`, 4},
		{`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8},
		{`{"w":{"dtype":"F32",`, 0},
		{`{"__metadata__":{"a":1}}`, 0},
	} {
		f.Add([]byte(seed.header), seed.dataLen)
	}
	f.Fuzz(func(t *testing.T, js []byte, dataLen int64) {
		if dataLen < 0 || dataLen > 1<<20 {
			dataLen &= 1<<20 - 1
		}
		h, err := parseHeader("fuzz", js, dataLen)
		checkOracle(t, js, dataLen, h, err) // the Rust crate's rules, as ported (oracle_test.go)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "safetensors fuzz: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		names := map[string]bool{}
		var end int64
		for i, ti := range h.tensors {
			if names[ti.Name] || ti.Name == metadataKey {
				t.Fatalf("tensor %d: name %q repeated or reserved", i, ti.Name)
			}
			names[ti.Name] = true
			if !ti.Dtype.Valid() {
				t.Fatalf("%q: dtype %q accepted", ti.Name, ti.Dtype)
			}
			for _, d := range ti.Shape {
				if d < 0 {
					t.Fatalf("%q: shape %v accepted", ti.Name, ti.Shape)
				}
			}
			if ti.Begin != end || ti.End < ti.Begin || ti.End-ti.Begin != ti.NumElements()*int64(ti.Dtype.Size()) {
				t.Fatalf("%q: offsets [%d,%d) accepted after end %d (shape %v %s)", ti.Name, ti.Begin, ti.End, end, ti.Shape, ti.Dtype)
			}
			end = ti.End
		}
		if end != dataLen {
			t.Fatalf("tensors cover [0,%d) of %d data bytes", end, dataLen)
		}
		// The whole-file path agrees with the header-only one.
		file := append(fileBytes(string(js), nil), make([]byte, dataLen)...)
		if _, start, err := parseFile("fuzz", file); err != nil || start != 8+int64(len(js)) {
			t.Fatalf("parseFile disagrees: start %d, %v", start, err)
		}
	})
}
