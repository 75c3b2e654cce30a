package safetensors

import (
	"maps"
	"slices"
	"strings"
	"testing"

	nlp "github.com/nlpodyssey/safetensors"
)

// The oracle: github.com/nlpodyssey/safetensors, a Go port of the official
// Rust crate's header parsing and validation (Metadata::validate,
// read_metadata), written apart from this package. FuzzParseHeader checks
// every input against it: both accept or both refuse, and what both accept
// they read alike (tensors, dtypes, shapes, offsets, metadata). They differ
// on purpose, and only, where the Rust crate sides with this package:
//
//   - this package refuses, the port accepts: a key given twice (the port's
//     map keeps the last; the crate's too, but a duplicate hides a tensor,
//     so this package refuses it), a header not starting with '{' (the
//     crate's InvalidHeaderStart), a header that is not UTF-8 (the crate
//     refuses it: from_utf8; the port's encoding/json reads it as U+FFFD);
//   - this package accepts, the port refuses: the dtypes the crate has and
//     the port lacks (F8_E5M2, F8_E4M3, F8_E8M0, C64), and a tensor entry
//     with fields besides dtype, shape and data_offsets (the crate ignores
//     them; the port wants exactly three).
//
// docs/DEPENDENCIES.md says why the port is the oracle and not the parser.

// oracleDtypes are the dtypes the port knows.
var oracleDtypes = []Dtype{BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64}

// checkOracle compares parseHeader's result (h, err) on the header js of a
// file with dataLen data bytes with the port's on the same file.
func checkOracle(t *testing.T, js []byte, dataLen int64, h header, err error) {
	t.Helper()
	file := append(fileBytes(string(js), nil), make([]byte, dataLen)...)
	_, meta, oerr := nlp.ReadMetadata(file)
	switch {
	case err != nil && oerr != nil:
		return
	case err != nil:
		for _, why := range []string{"twice", "does not start with '{'", "not valid UTF-8"} {
			if strings.Contains(err.Error(), why) {
				return
			}
		}
		if duplicateKey(js) {
			// The oracle decodes into a map, where a repeated name's last
			// entry wins; this package refuses the header, here for what is
			// wrong with an earlier entry of that name, before it meets the
			// repetition ("twice" above).
			return
		}
		t.Fatalf("refused (%v), but the oracle accepts it with tensors %v", err, meta.Tensors())
	case oerr != nil:
		if why := oracleStricter(js, h); why == "" {
			t.Fatalf("accepted (tensors %+v), but the oracle refuses it: %v", h.tensors, oerr)
		}
		return
	}
	got := meta.Tensors()
	if len(got) != len(h.tensors) {
		t.Fatalf("%d tensors, the oracle %d", len(h.tensors), len(got))
	}
	for _, ti := range h.tensors {
		o, ok := got[ti.Name]
		shape := make([]uint64, len(ti.Shape))
		for i, d := range ti.Shape {
			shape[i] = uint64(d)
		}
		if !ok || o.DType.String() != string(ti.Dtype) || !slices.Equal(o.Shape, shape) ||
			o.DataOffsets != [2]uint64{uint64(ti.Begin), uint64(ti.End)} {
			t.Fatalf("tensor %q: %s %v [%d,%d), the oracle %+v (found %v)", ti.Name, ti.Dtype, ti.Shape, ti.Begin, ti.End, o, ok)
		}
	}
	if !maps.Equal(h.metadata, meta.Metadata()) && (len(h.metadata) > 0 || len(meta.Metadata()) > 0) {
		t.Fatalf("metadata %v, the oracle %v", h.metadata, meta.Metadata())
	}
}

// duplicateKey reports whether the header's top-level object names an entry
// twice.
func duplicateKey(js []byte) bool {
	entries, _ := splitObject(js)
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.key] {
			return true
		}
		seen[e.key] = true
	}
	return false
}

// oracleStricter says why the port refuses a header this package accepted
// (h), if it is one of the documented differences; "" if it is not.
func oracleStricter(js []byte, h header) string {
	for _, ti := range h.tensors {
		if !slices.Contains(oracleDtypes, ti.Dtype) {
			return "dtype " + string(ti.Dtype)
		}
	}
	entries, _ := splitObject(js)
	for _, e := range entries {
		if e.key == metadataKey {
			continue
		}
		fields, _ := splitObject(e.value)
		for _, f := range fields {
			if f.key != "dtype" && f.key != "shape" && f.key != "data_offsets" {
				return "field " + f.key
			}
		}
	}
	return ""
}

// TestOracleDifferences: each documented difference with the oracle is
// found by the checks above, and a plain file is read alike.
func TestOracleDifferences(t *testing.T) {
	for _, c := range []struct {
		header       string
		dataLen      int64
		ours, oracle bool // accepted here, by the oracle
	}{
		{`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}`, 8, true, true},
		{`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4, false, true},
		{` {"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4, false, true},
		{"{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, false, true},
		{`{"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}}`, 4, true, false},
		{`{"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}`, 8, true, false},
		{`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"note":1}}`, 4, true, false},
		// Fields by their exact names, as HF reads them: other capitals are other fields.
		{`{"w":{"DTYPE":"F32","Shape":[1],"Data_Offsets":[0,4]}}`, 4, false, false},
		{`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"DTYPE":"F16","SHAPE":[4]}}`, 1, true, false},
		{`{"__metadata__":{"format":null}}`, 0, false, false},
		{`{"w":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}}`, 0, false, false},
		{`{"w":{"dtype":"F32","shape":[0],"data_offsets":[-0,0]}}`, 0, false, false},
		{`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4, false, false},
	} {
		h, err := parseHeader("oracle", []byte(c.header), c.dataLen)
		_, _, oerr := nlp.ReadMetadata(append(fileBytes(c.header, nil), make([]byte, c.dataLen)...))
		if (err == nil) != c.ours || (oerr == nil) != c.oracle {
			t.Errorf("%s: accepted here %v (%v), by the oracle %v (%v); want %v, %v", c.header, err == nil, err, oerr == nil, oerr, c.ours, c.oracle)
		}
		checkOracle(t, []byte(c.header), c.dataLen, h, err)
	}
}
