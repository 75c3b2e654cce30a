package safetensors

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWriteReadRoundTrip writes F32, F64, I64 and BF16 tensors and reads them back.
func TestWriteReadRoundTrip(t *testing.T) {
	f32 := []float32{0, -0, 1.5, -2.25, float32(math.Inf(1)), math.SmallestNonzeroFloat32, math.MaxFloat32}
	f64 := []float64{math.Pi, -1e300, 5e-324}
	i64 := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, 42}
	// BF16 inputs and their round-to-nearest-even results, worked out by hand:
	// 1+2^-8 is halfway between 1 and 1+2^-7 (tie → even mantissa: 1);
	// 1+3·2^-8 is halfway between 1+2^-7 and 1+2^-6 (tie → even: 1+2^-6);
	// 1+2^-8+2^-20 is just above the halfway point (→ 1+2^-7).
	bfIn := []float32{1, 1 + 1.0/256, 1 + 3.0/256, 1 + 1.0/256 + 1.0/(1<<20), -3, 0.1}
	bfWant := []float32{1, 1, 1 + 1.0/64, 1 + 1.0/128, -3, roundToBF16(0.1)}
	meta := map[string]string{"format": "pt", "note": `quotes " and <html> & unicode é`}

	path := filepath.Join(t.TempDir(), "out.safetensors")
	err := WriteFile(path, []Tensor{
		I64Tensor("ids", []int{2, 3}, i64),
		F32Tensor("w", []int{7}, f32),
		F64Tensor("x", []int{3, 1}, f64),
		BF16Tensor("bf", []int{2, 3}, bfIn),
		F32Tensor("empty", []int{0, 4}, nil),
		F32Tensor("scalar", nil, []float32{7}),
	}, meta)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if got := f.Metadata(); !maps.Equal(got, meta) {
		t.Errorf("metadata %v, want %v", got, meta)
	}
	var names []string
	for _, info := range f.Tensors() {
		names = append(names, info.Name)
	}
	if want := []string{"bf", "empty", "ids", "scalar", "w", "x"}; !slices.Equal(names, want) {
		t.Errorf("data order %v, want names sorted %v", names, want)
	}
	for name, shape := range map[string][]int{"ids": {2, 3}, "w": {7}, "x": {3, 1}, "bf": {2, 3}, "empty": {0, 4}, "scalar": {}} {
		info, ok := f.Info(name)
		if !ok || !slices.Equal(info.Shape, shape) {
			t.Errorf("%s: shape %v (found %v), want %v", name, info.Shape, ok, shape)
		}
	}

	gf, err := f.Float32("w")
	checkEqual(t, "w", gf, f32, err)
	if math.Float32bits(gf[1]) != math.Float32bits(f32[1]) {
		t.Error("sign of -0 lost")
	}
	gd, err := f.Float64("x")
	checkEqual(t, "x", gd, f64, err)
	gd32, err := f.Float32("x")
	checkEqual(t, "x as float32", gd32, []float32{float32(math.Pi), float32(math.Inf(-1)), 0}, err)
	gi, err := f.Int64("ids")
	checkEqual(t, "ids", gi, i64, err)
	gb, err := f.Float32("bf")
	checkEqual(t, "bf", gb, bfWant, err)
	ge, err := f.Float32("empty")
	checkEqual(t, "empty", ge, []float32{}, err)
	gs, err := f.Float64("scalar")
	checkEqual(t, "scalar", gs, []float64{7}, err)

	// BF16 NaN stays NaN (and ±Inf stays infinite) when written.
	nan := BF16Tensor("n", []int{3}, []float32{float32(math.NaN()), float32(math.Inf(-1)), math.MaxFloat32})
	v0 := bf16ToFloat32(binary.LittleEndian.Uint16(nan.Data))
	v1 := bf16ToFloat32(binary.LittleEndian.Uint16(nan.Data[2:]))
	v2 := bf16ToFloat32(binary.LittleEndian.Uint16(nan.Data[4:]))
	if v0 == v0 || !math.IsInf(float64(v1), -1) || !math.IsInf(float64(v2), 1) {
		t.Errorf("BF16 of NaN, -Inf, MaxFloat32 = %v %v %v, want NaN -Inf +Inf", v0, v1, v2)
	}
}

// checkEqual compares with == (so -0 equals 0; no NaN is compared here).
func checkEqual[T comparable](t *testing.T, name string, got, want []T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// TestWriteMatchesHF rewrites each fixture file from what we read and expects
// the same bytes: header key order, JSON spelling, padding and data layout
// are the ones HF's safetensors produced.
func TestWriteMatchesHF(t *testing.T) {
	dir := fixtureModels(t)
	for _, file := range []string{
		"llama-tiny/model.safetensors",
		"llama-tiny/bf16/model.safetensors",
		"qwen3-tiny/lora/adapter_model.safetensors",
		"qwen3-tiny/reference.safetensors", // mixed I64, F64, F32
	} {
		t.Run(file, func(t *testing.T) {
			src := filepath.Join(dir, file)
			f, err := Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var tensors []Tensor
			for _, info := range f.Tensors() {
				data, err := f.Bytes(info.Name)
				if err != nil {
					t.Fatal(err)
				}
				tensors = append(tensors, Tensor{Name: info.Name, Dtype: info.Dtype, Shape: info.Shape, Data: data})
			}
			slices.Reverse(tensors) // input order must not matter
			out := filepath.Join(t.TempDir(), "model.safetensors")
			if err := WriteFile(out, tensors, f.Metadata()); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(src)
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				n := min(len(got), len(want))
				i := 0
				for i < n && got[i] == want[i] {
					i++
				}
				t.Fatalf("rewritten file differs from HF's at byte %d (sizes %d, %d): got %.40q want %.40q",
					i, len(got), len(want), got[i:min(i+40, len(got))], want[i:min(i+40, len(want))])
			}
		})
	}
}

// TestWriteFileErrors: bad tensors give an error naming the file and the
// tensor, and leave neither the target nor a temporary file behind.
func TestWriteFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"wrong length", []Tensor{F32Tensor("w", []int{2, 2}, []float32{1, 2, 3})}, `tensor "w": dtype F32 shape [2 2] needs 16 bytes but Data has 12`},
		{"negative shape", []Tensor{{Name: "w", Dtype: F32, Shape: []int{-1}}}, `tensor "w": shape [-1] has a negative dimension`},
		{"unknown dtype", []Tensor{{Name: "w", Dtype: "F31", Shape: []int{0}}}, `tensor "w": unknown dtype "F31"`},
		{"overflow", []Tensor{{Name: "w", Dtype: F64, Shape: []int{1 << 30, 1 << 30, 1 << 30}}}, `tensor "w": shape [1073741824 1073741824 1073741824] of F64 overflows`},
		{"duplicate", []Tensor{I64Tensor("a", []int{1}, []int64{1}), I64Tensor("a", []int{1}, []int64{2})}, `tensor "a": given twice`},
		{"reserved name", []Tensor{I64Tensor("__metadata__", []int{1}, []int64{1})}, `tensor "__metadata__": the name __metadata__ is reserved`},
		{"bad UTF-8 name", []Tensor{I64Tensor("a\xff", []int{1}, []int64{1})}, `name is not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.safetensors")
			err := WriteFile(path, tc.tensors, nil)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, path, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files left behind: %v", entries)
			}
		})
	}
}

// TestWriteFileReplaces: writing over an existing file replaces it whole and
// leaves no temporary file; a write into a missing directory fails cleanly.
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	for _, v := range [][]float32{{1, 2, 3}, {4}} {
		if err := WriteFile(path, []Tensor{F32Tensor("v", []int{len(v)}, v)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Float32("v")
	f.Close()
	if err != nil || !slices.Equal(got, []float32{4}) {
		t.Errorf("after overwrite v = %v (%v), want [4]", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want just the file", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "nope", "m.safetensors"), nil, nil); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("write into a missing directory: %v", err)
	}
}

// writeShards writes a two-shard checkpoint with an index into a new dir.
func writeShards(t *testing.T, index string) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), []Tensor{
		F32Tensor("model.embed_tokens.weight", []int{2, 2}, []float32{1, 2, 3, 4}),
		F32Tensor("model.layers.0.mlp.up_proj.weight", []int{1, 2}, []float32{5, 6}),
	}, map[string]string{"format": "pt"}))
	must(WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), []Tensor{
		BF16Tensor("model.norm.weight", []int{2}, []float32{0.5, -1}),
	}, map[string]string{"format": "pt"}))
	must(os.WriteFile(filepath.Join(dir, indexFileName), []byte(index), 0o644))
	return dir
}

const goodIndex = `{"metadata": {"total_size": 28}, "weight_map": {
  "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
  "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
  "model.norm.weight": "model-00002-of-00002.safetensors"}}`

func TestShardedCheckpoint(t *testing.T) {
	dir := writeShards(t, goodIndex)
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := []string{"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"}
	if !slices.Equal(c.Names(), want) {
		t.Errorf("Names() = %v, want %v", c.Names(), want)
	}
	for name, v := range map[string][]float32{
		"model.embed_tokens.weight":         {1, 2, 3, 4},
		"model.layers.0.mlp.up_proj.weight": {5, 6},
		"model.norm.weight":                 {0.5, -1},
	} {
		got, err := c.Float32(name)
		if err != nil || !slices.Equal(got, v) {
			t.Errorf("%s = %v (%v), want %v", name, got, err, v)
		}
	}
	if info, ok := c.Info("model.norm.weight"); !ok || info.Dtype != BF16 || !slices.Equal(info.Shape, []int{2}) {
		t.Errorf("Info(model.norm.weight) = %+v %v", info, ok)
	}
	_, err = c.Float32("lm_head.weight")
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), `"lm_head.weight"`) {
		t.Errorf("missing tensor: %v, want an error naming the dir and the tensor", err)
	}

	// A single model.safetensors takes precedence over an index, as in transformers.
	if err := WriteFile(filepath.Join(dir, singleFileName), []Tensor{F32Tensor("only", []int{1}, []float32{9})}, nil); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !slices.Equal(c2.Names(), []string{"only"}) {
		t.Errorf("with model.safetensors present, Names() = %v", c2.Names())
	}
}

func TestShardedCheckpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index string
		want  []string
	}{
		{"missing shard file", strings.Replace(goodIndex, `"model.norm.weight": "model-00002-of-00002`, `"model.norm.weight": "model-00003-of-00003`, 1),
			[]string{indexFileName, `shard "model-00003-of-00003.safetensors"`, "no such file"}},
		{"tensor missing from shard", strings.Replace(goodIndex, `"model.norm.weight"`, `"model.final_norm.weight"`, 1),
			[]string{`tensor "model.final_norm.weight" is listed in shard "model-00002-of-00002.safetensors"`, "has no such tensor"}},
		{"tensor listed in the wrong shard", strings.Replace(goodIndex, `"model.norm.weight": "model-00002-of-00002`, `"model.norm.weight": "model-00001-of-00002`, 1),
			[]string{`tensor "model.norm.weight" is listed in shard "model-00001-of-00002.safetensors"`}},
		{"shard tensor not listed", strings.Replace(goodIndex, `"model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",`, ``, 1),
			[]string{`holds tensor "model.layers.0.mlp.up_proj.weight", which the index does not list`}},
		{"shard outside dir", strings.Replace(goodIndex, `"model-00002-of-00002.safetensors"`, `"../model-00002-of-00002.safetensors"`, 1),
			[]string{`shard "../model-00002-of-00002.safetensors" is not a file inside`}},
		{"no weight_map", `{"metadata": {}}`, []string{"weight_map is missing or empty"}},
		{"shard name of 1 MiB", strings.Replace(goodIndex, `"model-00002-of-00002.safetensors"`, `"`+strings.Repeat("s", 1<<20)+`"`, 1),
			[]string{`sss"… (1048576 bytes) is no file's name`}},
		{"tensor name of 1 MiB", strings.Replace(goodIndex, `"model.norm.weight"`, `"`+strings.Repeat("n", 1<<20)+`"`, 1),
			[]string{`nnn"… (1048576 bytes) is listed in shard "model-00002-of-00002.safetensors"`}},
		{"bad JSON", `{"weight_map": [`, []string{indexFileName, "unexpected end of JSON input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeShards(t, tc.index)
			c, err := OpenCheckpoint(dir)
			if err == nil {
				c.Close()
				t.Fatal("OpenCheckpoint succeeded, want an error")
			}
			if len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes, beginning %.300q", len(err.Error()), err)
			}
			for _, w := range append(tc.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	dir := t.TempDir()
	if _, err := OpenCheckpoint(dir); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "neither model.safetensors nor") {
		t.Errorf("empty dir: %v", err)
	}
	// The HF cache's layout, its blob missing (an interrupted or pruned download): said so, not "neither".
	dangling := t.TempDir()
	if err := os.Symlink("../../blobs/abc123", filepath.Join(dangling, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) error{
		func(d string) error { _, err := OpenCheckpoint(d); return err },
		func(d string) error { _, err := CheckpointFiles(d); return err },
	} {
		if err := open(dangling); err == nil || !strings.Contains(err.Error(), "model.safetensors is a symbolic link to ../../blobs/abc123, which does not exist") {
			t.Errorf("a dangling model.safetensors link: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(dir); err == nil || !strings.Contains(err.Error(), "scripts/bin_to_safetensors.py") {
		t.Errorf("a folder with pytorch_model.bin only: %v, want the converter named", err)
	}
	sharded := t.TempDir() // the larger OPT models: shards and pytorch_model.bin.index.json
	if err := os.WriteFile(filepath.Join(sharded, "pytorch_model.bin.index.json"), []byte(`{"weight_map":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCheckpoint(sharded); err == nil || !strings.Contains(err.Error(), "it has PyTorch's pytorch_model.bin.index.json, which scripts/bin_to_safetensors.py converts") {
		t.Errorf("a folder with a sharded pytorch_model.bin: %v, want the converter named", err)
	}
}

// BenchmarkFloat32BF16 measures BF16 → float32 conversion throughput; the
// bytes counted are the BF16 bytes read (a Qwen3-0.6B checkpoint is ~1.2 GB).
func BenchmarkFloat32BF16(b *testing.B) {
	const n = 1 << 22 // 4M values, 8 MiB of BF16
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%1000) * 0.001
	}
	path := filepath.Join(b.TempDir(), "bf16.safetensors")
	if err := WriteFile(path, []Tensor{BF16Tensor("w", []int{n}, v)}, nil); err != nil {
		b.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(2 * n)
	for b.Loop() {
		if _, err := f.Float32("w"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWriteShardedRefuses: a name given twice (landing in two shards, it
// made a checkpoint whose index lists it once, which no reader opens), and
// a directory that holds a checkpoint already (a sharded save beside an
// earlier model.safetensors was read as the earlier one) are refused, and
// nothing is written.
func TestWriteShardedRefuses(t *testing.T) {
	f32 := func(name string, n int) Tensor { return F32Tensor(name, []int{n}, make([]float32, n)) }
	dir := t.TempDir()
	err := WriteSharded(dir, []Tensor{f32("a", 10), f32("b", 10), f32("a", 10)}, nil, 80)
	if err == nil || !strings.Contains(err.Error(), `tensor "a" given twice`) {
		t.Errorf("a name twice: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("a refused write left %d files", len(ents))
	}
	if err := WriteSharded(dir, []Tensor{f32("w", 1)}, nil, 1000); err != nil {
		t.Fatal(err)
	}
	err = WriteSharded(dir, []Tensor{f32("w", 1), f32("x", 100)}, nil, 100)
	if err == nil || !strings.Contains(err.Error(), "holds a checkpoint already") {
		t.Errorf("a sharded save over model.safetensors: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the refused save left %d files, want the first save's one", len(ents))
	}
}
