package safetensors

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureModels is $MEAZO_SHARED/fixtures/models, or the test is skipped.
func fixtureModels(t testing.TB) string {
	t.Helper()
	shared := os.Getenv("MEAZO_SHARED")
	if shared == "" {
		t.Skip("MEAZO_SHARED is not set: skipping a test that needs the shared reference fixtures (make test sets it to ../shared where that folder is)")
	}
	return filepath.Join(shared, "fixtures", "models")
}

// manifestModel is the part of manifest.json → models[name] that we check against.
type manifestModel struct {
	ModelTensors     map[string]manifestTensor `json:"model_safetensors_tensors"`
	AdapterTensors   map[string]manifestTensor `json:"adapter_safetensors_tensors"`
	ReferenceTensors map[string]manifestTensor `json:"reference_tensors"`
	Generation       []struct {
		Prompt    []int64 `json:"prompt"`
		NewTokens []int64 `json:"new_tokens"`
	} `json:"generation"`
	Stats map[string]any `json:"stats"`
}

type manifestTensor struct {
	Dtype string `json:"dtype"`
	Shape []int  `json:"shape"`
}

func readManifest(t *testing.T, dir string) (models map[string]manifestModel, lengths []int) {
	t.Helper()
	js, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Models map[string]manifestModel `json:"models"`
		Set    struct {
			Lengths []int `json:"lengths"`
		} `json:"set_definition"`
	}
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	return m.Models, m.Set.Lengths
}

// torchDtypes maps the manifest's torch dtype names to safetensors ones.
var torchDtypes = map[string]Dtype{"float32": F32, "float64": F64, "int64": I64, "bfloat16": BF16}

// TestFixtureTensorLists checks every fixture file's tensor names, dtypes and
// shapes against the lists manifest.json records for it.
func TestFixtureTensorLists(t *testing.T) {
	dir := fixtureModels(t)
	models, _ := readManifest(t, dir)
	for _, model := range []string{"llama-tiny", "qwen3-tiny"} {
		m, ok := models[model]
		if !ok {
			t.Fatalf("manifest has no model %s", model)
		}
		bf16 := map[string]manifestTensor{}
		for name, mt := range m.ModelTensors {
			bf16[name] = manifestTensor{"BF16", mt.Shape}
		}
		for _, tc := range []struct {
			file string
			want map[string]manifestTensor
		}{
			{"model.safetensors", m.ModelTensors},
			{"bf16/model.safetensors", bf16},
			{"lora/adapter_model.safetensors", m.AdapterTensors},
			{"reference.safetensors", m.ReferenceTensors},
		} {
			t.Run(model+"/"+tc.file, func(t *testing.T) {
				if len(tc.want) == 0 {
					t.Fatal("manifest lists no tensors for this file")
				}
				f, err := Open(filepath.Join(dir, model, tc.file))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if got := f.Metadata(); got["format"] != "pt" {
					t.Errorf("metadata = %v, want format=pt", got)
				}
				infos := f.Tensors()
				if len(infos) != len(tc.want) {
					t.Errorf("%d tensors, manifest lists %d", len(infos), len(tc.want))
				}
				for i, info := range infos {
					if i > 0 && info.Begin != infos[i-1].End {
						t.Errorf("Tensors() not in offset order at %q", info.Name)
					}
					want, ok := tc.want[info.Name]
					if !ok {
						t.Errorf("tensor %q not in manifest", info.Name)
						continue
					}
					wantDtype := Dtype(want.Dtype)
					if d, ok := torchDtypes[want.Dtype]; ok {
						wantDtype = d
					}
					if info.Dtype != wantDtype || !slices.Equal(info.Shape, want.Shape) {
						t.Errorf("%q: %s %v, manifest says %s %v", info.Name, info.Dtype, info.Shape, wantDtype, want.Shape)
					}
				}
			})
		}
	}
}

// TestFixtureTiedEmbeddings: HF save_pretrained omits lm_head.weight for tied
// models, so the tiny checkpoints have 1 + per-layer + final norm tensors.
func TestFixtureTiedEmbeddings(t *testing.T) {
	dir := fixtureModels(t)
	for _, tc := range []struct {
		model string
		want  int
	}{
		{"llama-tiny", 1 + 9*3 + 1},
		{"qwen3-tiny", 1 + 11*3 + 1},
	} {
		c, err := OpenCheckpoint(filepath.Join(dir, tc.model))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(c.Names()); got != tc.want {
			t.Errorf("%s: %d tensors, want %d", tc.model, got, tc.want)
		}
		if _, ok := c.Info("lm_head.weight"); ok {
			t.Errorf("%s: lm_head.weight present, want it omitted (tied)", tc.model)
		}
		_, err = c.Float32("lm_head.weight")
		if err == nil || !strings.Contains(err.Error(), `"lm_head.weight"`) || !strings.Contains(err.Error(), c.Dir()) {
			t.Errorf("%s: missing tensor error %v should name the tensor and the dir", tc.model, err)
		}
		c.Close()
	}
}

// roundToBF16 rounds x to the nearest bfloat16 value, ties to even, by
// comparing distances to the two neighbours in float64 (deliberately not the
// bit trick the package uses to write BF16).
func roundToBF16(x float32) float32 {
	bits := math.Float32bits(x)
	lo := math.Float32frombits(bits &^ 0xffff) // toward zero
	hi := math.Float32frombits((bits &^ 0xffff) + 0x10000)
	dlo := math.Abs(float64(x) - float64(lo))
	dhi := math.Abs(float64(hi) - float64(x))
	switch {
	case dlo < dhi:
		return lo
	case dhi < dlo:
		return hi
	case (bits>>16)&1 == 0: // tie: the one with an even last mantissa bit
		return lo
	}
	return hi
}

// TestFixtureBF16 checks that the BF16 checkpoint read as float32 equals the
// F32 checkpoint rounded to bfloat16 with round-to-nearest-even.
func TestFixtureBF16(t *testing.T) {
	dir := fixtureModels(t)
	for _, model := range []string{"llama-tiny", "qwen3-tiny"} {
		f32, err := OpenCheckpoint(filepath.Join(dir, model))
		if err != nil {
			t.Fatal(err)
		}
		bf, err := OpenCheckpoint(filepath.Join(dir, model, "bf16"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f32.Names(), bf.Names()) {
			t.Fatalf("%s: bf16 names differ from f32 names", model)
		}
		changed := 0
		for _, name := range f32.Names() {
			want, err := f32.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := bf.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d values, want %d", model, name, len(got), len(want))
			}
			for i := range want {
				r := roundToBF16(want[i])
				if got[i] != r {
					t.Fatalf("%s %s[%d]: bf16 file %g, f32 %g rounds to %g", model, name, i, got[i], want[i], r)
				}
				if r != want[i] {
					changed++
				}
			}
			// Float64 of a BF16 tensor widens the same values exactly.
			g64, err := bf.Float64(name)
			if err != nil {
				t.Fatal(err)
			}
			for i := range g64 {
				if g64[i] != float64(got[i]) {
					t.Fatalf("%s %s[%d]: Float64 %g != Float32 %g", model, name, i, g64[i], got[i])
				}
			}
		}
		if changed == 0 {
			t.Errorf("%s: rounding to bf16 changed no value; the test would not see a wrong conversion", model)
		}
		f32.Close()
		bf.Close()
	}
}

// TestFixtureReferenceValues reads I64, F64 and F32 reference tensors and
// checks them against values manifest.json records independently.
func TestFixtureReferenceValues(t *testing.T) {
	dir := fixtureModels(t)
	models, lengths := readManifest(t, dir)
	for _, model := range []string{"llama-tiny", "qwen3-tiny"} {
		m := models[model]
		f, err := Open(filepath.Join(dir, model, "reference.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		readI64 := func(name string) []int64 {
			v, err := f.Int64(name)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// I64: generation prompts and tokens, and the mask's row lengths.
		for i, g := range m.Generation {
			p := readI64("gen" + string(rune('0'+i)) + "_prompt")
			n := readI64("gen" + string(rune('0'+i)) + "_new_tokens")
			if !slices.Equal(p, g.Prompt) || !slices.Equal(n, g.NewTokens) {
				t.Errorf("%s gen%d: prompt %v tokens %v, manifest %v %v", model, i, p, n, g.Prompt, g.NewTokens)
			}
		}
		mask := readI64("attention_mask")
		L := len(mask) / len(lengths)
		for b, want := range lengths {
			var sum int
			for _, v := range mask[b*L : (b+1)*L] {
				sum += int(v)
			}
			if sum != want {
				t.Errorf("%s attention_mask row %d sums to %d, want %d", model, b, sum, want)
			}
		}

		// F64: max |logits_f64| is recorded exactly.
		l64, err := f.Float64("logits_f64")
		if err != nil {
			t.Fatal(err)
		}
		var absmax float64
		for _, v := range l64 {
			absmax = max(absmax, math.Abs(v))
		}
		if want := m.Stats["logits_absmax_f64"].(float64); absmax != want {
			t.Errorf("%s max|logits_f64| = %v, manifest %v", model, absmax, want)
		}

		// F32 against F64: max |logits_f32 - logits_f64| over all positions.
		l32, err := f.Float32("logits_f32")
		if err != nil {
			t.Fatal(err)
		}
		var diff float64
		for i := range l32 {
			diff = max(diff, math.Abs(float64(l32[i])-l64[i]))
		}
		if want := m.Stats["max_abs_logits_f32_vs_f64exact_all_positions"].(float64); diff != want {
			t.Errorf("%s max|logits_f32-logits_f64| = %v, manifest %v", model, diff, want)
		}

		// Wrong-dtype reads are errors naming the file and the tensor.
		for _, tc := range []struct {
			read func(string) error
			name string
		}{
			{func(n string) error { _, err := f.Float32(n); return err }, "input_ids"},
			{func(n string) error { _, err := f.Float64(n); return err }, "input_ids"},
			{func(n string) error { _, err := f.Int64(n); return err }, "logits_f32"},
			{func(n string) error { _, err := f.Float32(n); return err }, "no_such_tensor"},
		} {
			err := tc.read(tc.name)
			if err == nil || !strings.Contains(err.Error(), f.Path()) || !strings.Contains(err.Error(), `"`+tc.name+`"`) {
				t.Errorf("%s read of %s: error %v should name the file and the tensor", model, tc.name, err)
			}
		}

		// Slices returned before Close stay valid (they are copies, so
		// reading them after munmap neither faults nor changes); reads after
		// Close fail.
		sum := func(v []float32) (s float64) {
			for _, x := range v {
				s += float64(x)
			}
			return s
		}
		before := sum(l32)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if after := sum(l32); after != before {
			t.Errorf("slice changed after Close: sum %v, was %v", after, before)
		}
		if _, err := f.Float32("logits_f32"); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("read after Close: %v, want a 'closed' error", err)
		}
	}
}

// TestF16ToFloat32 checks every half-precision bit pattern against the
// textbook formula (-1)^s × 2^(e-15) × 1.m, or 2^-14 × 0.m for subnormals.
func TestF16ToFloat32(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		s := float64(1 - 2*(h>>15))
		e := (h >> 10) & 0x1f
		m := float64(h & 0x3ff)
		var want float64
		switch e {
		case 0:
			want = s * math.Ldexp(m/1024, -14)
		case 0x1f:
			want = s * math.Inf(1)
			if m != 0 {
				want = math.NaN()
			}
		default:
			want = s * math.Ldexp(1+m/1024, e-15)
		}
		got := f16ToFloat32(uint16(h))
		switch {
		case math.IsNaN(want):
			if got == got {
				t.Fatalf("%#04x: got %g, want NaN", h, got)
			}
		case float64(got) != want || math.Signbit(float64(got)) != (s < 0):
			t.Fatalf("%#04x: got %g, want %g", h, got, want)
		}
	}
}

// TestReleaseKeepsValues reads a tensor, releases its pages, and reads it again.
func TestReleaseKeepsValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.safetensors")
	v := make([]float32, 5000) // spans several pages
	for i := range v {
		v[i] = float32(i) * 0.5
	}
	if err := WriteFile(path, []Tensor{F32Tensor("w", []int{5000}, v)}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 2 {
		got, err := f.Float32("w")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, v) {
			t.Fatal("values changed after Release")
		}
		f.Release("w")
		f.Release("no-such-tensor")
	}
}
