package lora

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

const vitTiny = "../model/testdata/vit/vit-tiny"

func loadViT(t *testing.T) (*model.ViT, *safetensors.File) {
	t.Helper()
	m, err := model.LoadViT(vitTiny, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.Open(filepath.Join(vitTiny, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close(); m.Free() })
	return m, ref
}

func maxDiff(got []float32, want []float64) float64 {
	d := 0.0
	for i := range got {
		d = max(d, math.Abs(float64(got[i])-want[i]))
	}
	return d
}

// TestViTPEFTAdapter: the adapter the real PEFT 0.15 saved (LoRA r = 4 on
// query and value, the classifier in modules_to_save;
// scripts/make_vit_fixtures.py) loads, and the adapted model's logits are
// PEFT's float64 ones within 2e-4; saved again, it is the same tensors
// under the same names and shapes, and loads back to the same parameters.
func TestViTPEFTAdapter(t *testing.T) {
	m, ref := loadViT(t)
	pixels, _ := ref.Float32("pixel_values")
	want, _ := ref.Float64("lora_logits_f64")
	base, _ := ref.Float64("logits_f64")
	for _, grouped := range []bool{false, true} {
		a, err := LoadViT(filepath.Join(vitTiny, "lora"), m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		a.Attach(m)
		got, err := m.Logits(pixels, 4)
		m.Adapter = nil
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(got, want); d > 2e-4 {
			t.Errorf("grouped %v: logits %.3g from PEFT's", grouped, d)
		}
		if d := maxDiff(got, base); d < 0.1 {
			t.Errorf("the adapter moves the logits by only %.3g: is it applied?", d)
		}
		dir := t.TempDir()
		if err := a.Save(dir); err != nil {
			t.Fatal(err)
		}
		sameViTTensors(t, filepath.Join(vitTiny, "lora", "adapter_model.safetensors"), filepath.Join(dir, "adapter_model.safetensors"))
		b, err := LoadViT(dir, m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		for g := range a.Params() {
			if !slices.Equal(a.Params()[g], b.Params()[g]) {
				t.Errorf("group %d changed in a save and load", g)
			}
		}
	}
}

// sameViTTensors checks that two safetensors files hold the same names,
// shapes and values.
func sameViTTensors(t *testing.T, a, b string) {
	t.Helper()
	fa, err := safetensors.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := safetensors.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if len(fa.Tensors()) != len(fb.Tensors()) {
		t.Fatalf("%d tensors, %d", len(fa.Tensors()), len(fb.Tensors()))
	}
	for _, ti := range fa.Tensors() {
		tj, ok := fb.Info(ti.Name)
		if !ok || !slices.Equal(ti.Shape, tj.Shape) {
			t.Fatalf("%s: %v, saved %v", ti.Name, ti.Shape, tj.Shape)
		}
		va, _ := fa.Float32(ti.Name)
		vb, _ := fb.Float32(ti.Name)
		if !slices.Equal(va, vb) {
			t.Errorf("%s: values differ", ti.Name)
		}
	}
}

// TestNewViTStartsAtTheModel: PEFT's initialisation (B = 0, the
// classifier copied) leaves the logits the model's; A is random.
func TestNewViTStartsAtTheModel(t *testing.T) {
	m, ref := loadViT(t)
	pixels, _ := ref.Float32("pixel_values")
	before, err := m.Logits(pixels, 4)
	if err != nil {
		t.Fatal(err)
	}
	before = slices.Clone(before)
	a, err := NewViT(m, Options{R: 4, Alpha: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	a.Attach(m)
	after, err := m.Logits(pixels, 4)
	m.Adapter = nil
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if math.Abs(float64(after[i]-before[i])) > 1e-5 {
			t.Fatalf("logit %d: %v with the new adapter, %v without", i, after[i], before[i])
		}
	}
	if v := a.View(a.Params()); v.Layers[0].Q.A[0] == 0 || v.Layers[2].V.B[0] != 0 {
		t.Errorf("A[0] = %v, B[0] = %v: want A random, B zero", v.Layers[0].Q.A[0], v.Layers[2].V.B[0])
	}
}

// TestViTB16Counts: ViT-B/16 (HF's ViTConfig defaults, which
// google/vit-base-patch16-224-in21k's config.json sets) with Pets' 37
// classes has 85,827,109 parameters, and LoRA r = 16 on query and value with
// the classifier trainable has 618,277: the paper's figures (and the real
// PEFT's count, scripts/make_vit_fixtures.py).
func TestViTB16Counts(t *testing.T) {
	labels := make([]string, 37)
	for i := range labels {
		labels[i] = fmt.Sprintf(`"%d": "breed %d"`, i, i)
	}
	c, err := model.ParseViTConfig([]byte(`{"architectures": ["ViTForImageClassification"], "hidden_size": 768,
		"num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
		"image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": true, "layer_norm_eps": 1e-12,
		"id2label": {` + strings.Join(labels, ", ") + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumLabels != 37 || c.ParamCount() != 85_827_109 {
		t.Errorf("%d classes, %d parameters; want 37, 85,827,109", c.NumLabels, c.ParamCount())
	}
	a, err := newViTShape(c, Options{R: 16, Alpha: 16, Targets: vitTargets})
	if err != nil {
		t.Fatal(err)
	}
	if a.Count() != 618_277 {
		t.Errorf("%d trainable, want 618,277", a.Count())
	}
}

// TestLoadViTRefuses: an adapter for a decoder, without the classifier, or
// with a tensor of another shape is an error naming it.
func TestLoadViTRefuses(t *testing.T) {
	m, _ := loadViT(t)
	src := filepath.Join(vitTiny, "lora")
	cfg, err := os.ReadFile(filepath.Join(src, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join(src, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	classifier := `"modules_to_save": [
    "classifier"
  ]`
	for _, tc := range []struct {
		name, from, to, want string
		noClassifier         bool // modules_to_save null as well
	}{
		{"no classifier", classifier, `"modules_to_save": null`, "modules_to_save", false},
		{"a decoder model's adapter", `"query"`, `"q_proj"`, `a decoder model's adapter, not a ViT's`, true},
		{"decoder targets", `"query"`, `"q_proj"`, `"q_proj" is not supported on a ViT`, false},
		{"rank", `"r": 4`, `"r": 8`, "has shape [4 64], want [8 64]", false},
		{"rank of the hidden size", `"r": 4`, `"r": 64`, "has shape [4 64], want [64 64]", false}, // refused before its parameters are allocated
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			edited := strings.Replace(string(cfg), tc.from, tc.to, 1)
			if edited == string(cfg) {
				t.Fatalf("%q is not in the fixture's config", tc.from)
			}
			if tc.noClassifier {
				edited = strings.Replace(edited, classifier, `"modules_to_save": null`, 1)
			}
			os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(edited), 0o644)
			os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), weights, 0o644)
			if _, err := LoadViT(dir, m, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
