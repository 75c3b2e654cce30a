package lora

import (
	"encoding/json"
	"fmt"
	"maps"
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
		got := adaptedLogits(t, a, m, pixels)
		if d := maxDiff(got, want); d > 2e-4 {
			t.Errorf("grouped %v: logits %.3g from PEFT's", grouped, d)
		}
		if d := maxDiff(got, base); d < 0.1 {
			t.Errorf("the adapter moves the logits by only %.3g: is it applied?", d)
		}
		saveRoundTrip(t, a, m, filepath.Join(vitTiny, "lora"), grouped)
	}
}

// adaptedLogits are m's logits of the images with a attached.
func adaptedLogits(t *testing.T, a *ViTAdapter, m *model.ViT, pixels []float32) []float32 {
	t.Helper()
	a.Attach(m)
	got, err := m.Logits(pixels, 4)
	m.Adapter = nil
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// saveRoundTrip saves a, checks that its tensors are those of the adapter
// in src (PEFT's names, shapes and values) and that it loads back to the
// same parameters, and returns the directory it saved into.
func saveRoundTrip(t *testing.T, a *ViTAdapter, m *model.ViT, src string, grouped bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	sameViTTensors(t, filepath.Join(src, "adapter_model.safetensors"), filepath.Join(dir, "adapter_model.safetensors"))
	b, err := LoadViT(dir, m, grouped)
	if err != nil {
		t.Fatal(err)
	}
	for g := range a.Params() {
		if !slices.Equal(a.Params()[g], b.Params()[g]) {
			t.Errorf("group %d changed in a save and load", g)
		}
	}
	return dir
}

// TestLoadViTRegex: the fixture's q/v adapter with target_modules the
// regular expression ".*\\.(query|value)|classifier" (PEFT 0.15's
// PeftModel.from_pretrained reads that directory to the fixture's logits,
// bit for bit in float64) loads to the parameters of the list's.
func TestLoadViTRegex(t *testing.T) {
	m, _ := loadViT(t)
	src := filepath.Join(vitTiny, "lora")
	want, err := LoadViT(src, m, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := editedAdapter(t, src, func(c map[string]any) { c["target_modules"] = `.*\.(query|value)|classifier` })
	got, err := LoadViT(dir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Targets(), []string{"query", "value"}) || !slices.Equal(got.Params()[0], want.Params()[0]) {
		t.Errorf("targets %q, parameters equal to the list's: %v", got.Targets(), slices.Equal(got.Params()[0], want.Params()[0]))
	}
}

// TestLoadViTSeqCls: the fixture's adapter as PEFT 0.15 saves it with
// task_type="SEQ_CLS", which adds "classifier" and "score" to
// modules_to_save (PeftModelForSequenceClassification; a ViT has no
// score, which PEFT skips), loads to the parameters of the plain one.
func TestLoadViTSeqCls(t *testing.T) {
	m, _ := loadViT(t)
	src := filepath.Join(vitTiny, "lora")
	want, err := LoadViT(src, m, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, mts := range [][]string{{"classifier", "classifier", "score"}, {"classifier", "score"}} {
		dir := editedAdapter(t, src, func(c map[string]any) { c["task_type"], c["modules_to_save"] = "SEQ_CLS", mts })
		got, err := LoadViT(dir, m, false)
		if err != nil {
			t.Fatalf("modules_to_save %q: %v", mts, err)
		}
		if !slices.Equal(got.Params()[0], want.Params()[0]) {
			t.Errorf("modules_to_save %q: other parameters", mts)
		}
	}
}

// TestLoadViTListedAllLinear: target_modules ["all-linear"], a list, is
// refused with how to write all-linear (the string), as PEFT 0.15 refuses
// it (get_peft_model on the fixture's model: "Target modules
// {'all-linear'} not found in the base model"; it expands all-linear from
// a string only); the string loads as every linear layer.
func TestLoadViTListedAllLinear(t *testing.T) {
	m, _ := loadViT(t)
	src := filepath.Join(vitTiny, "lora-all-linear")
	for _, tc := range []struct {
		targets any
		want    string // "": loads
	}{
		{[]string{"all-linear"}, `target_modules ["all-linear"] is a list holding "all-linear", which PEFT reads as the name of a module, not as its all-linear`},
		{[]string{"query", "All-Linear"}, `for every linear layer write the string "all-linear", not a list`},
		{"all-linear", ""},
	} {
		dir := editedAdapter(t, src, func(c map[string]any) { c["target_modules"] = tc.targets })
		a, err := LoadViT(dir, m, false)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("target_modules %q: %v", tc.targets, err)
		case tc.want == "" && len(a.targets) != 6:
			t.Errorf("target_modules %q: %d projections adapted, want 6", tc.targets, len(a.targets))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("target_modules %q: error %v, want one containing %q", tc.targets, err, tc.want)
		}
	}
}

// editedAdapter copies the adapter in src to a new directory, its
// adapter_config.json changed by edit, and returns the directory.
func editedAdapter(t *testing.T, src string, edit func(map[string]any)) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(src, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join(src, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	edit(c)
	edited, _ := json.Marshal(c)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), edited, 0o644)
	os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), weights, 0o644)
	return dir
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
// PEFT's count, scripts/make_vit_fixtures.py); on every linear layer of the
// encoder (all-linear), 2,682,661, PEFT's (make_vit_lora_fixture.py).
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
	// PEFT's counts (scripts/make_vit_fixtures.py, make_vit_lora_fixture.py):
	// r 16 on query and value, and on every linear layer (all-linear).
	for _, tc := range []struct {
		targets []string
		want    int
	}{{[]string{"query", "value"}, 618_277}, {[]string{AllLinear}, 2_682_661}, {[]string{"query", "key", "value", "dense"}, 2_682_661}} {
		ps, err := vitTargetsOf(c, Targets{Names: tc.targets}, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := newViTShape(c, Options{R: 16, Alpha: 16, Targets: tc.targets}, ps, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
		if err != nil {
			t.Fatal(err)
		}
		if a.Count() != tc.want {
			t.Errorf("%v: %d trainable, want %d", tc.targets, a.Count(), tc.want)
		}
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
		{"a norm trained whole", classifier, `"modules_to_save": ["classifier", "layernorm"]`, `modules_to_save "layernorm" names "vit.layernorm"`, false},
		{"every module trained whole", classifier, `"modules_to_save": ["classifier", ""]`, `modules_to_save "" names "vit"`, false},
		{"a decoder model's adapter", `"query"`, `"q_proj"`, `a decoder model's adapter, not a ViT's`, true},
		{"decoder targets", `"query"`, `"q_proj"`, `target module "q_proj" is no linear layer of the ViT's encoder`, false},
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

// TestViTAllLinearPEFT: the adapter the real PEFT 0.15 saved with
// target_modules="all-linear" (every linear layer of the encoder, B not 0;
// the classifier in modules_to_save; scripts/make_vit_lora_fixture.py)
// loads from the full names PEFT saves, and the adapted model's logits are
// PEFT's float64 ones within 2e-4 (the q/v test's tolerance) and far from
// those of the q/v adapter; saved again, it is PEFT's tensors under PEFT's
// names and shapes, its adapter_config.json PEFT's but for target_modules,
// which names the same modules in PEFT's reading (["query", "key",
// "value", "dense"]), and it loads back to the same parameters.
// (PeftModel.from_pretrained on the saved directory gives these logits:
// make_vit_lora_fixture.py --check.)
func TestViTAllLinearPEFT(t *testing.T) {
	m, ref := loadViT(t)
	src := filepath.Join(vitTiny, "lora-all-linear")
	pixels, _ := ref.Float32("pixel_values")
	want := peftLogits(t, src)
	qv, _ := ref.Float64("lora_logits_f64")
	for _, grouped := range []bool{false, true} {
		a, err := LoadViT(src, m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(a.targets); got != 6 {
			t.Fatalf("%d projections adapted, want 6", got)
		}
		got := adaptedLogits(t, a, m, pixels)
		if d := maxDiff(got, want); d > 2e-4 {
			t.Errorf("grouped %v: logits %.3g from PEFT's", grouped, d)
		}
		if d := maxDiff(got, qv); d < 0.1 {
			t.Errorf("the all-linear adapter's logits are within %.3g of the q/v adapter's: are k, o and the MLP's applied?", d)
		}
		dir := saveRoundTrip(t, a, m, src, grouped)
		samePEFTConfig(t, dir, src, "[query key value dense]")
	}
}

// TestViTLayersPEFT: the adapter the real PEFT 0.15 saved with
// layers_to_transform [0, 2] and layers_pattern "layer" (target_modules
// ["query", "value", "output.dense"]: PEFT adapts query, value,
// attention.output.dense and output.dense of layers 0 and 2, none of
// layer 1; scripts/make_vit_lora_fixture.py's lora-layers) loads on those
// layers, and the adapted model's logits are PEFT's float64 ones within
// 2e-4; saved again it is PEFT's tensors under PEFT's names and shapes,
// its adapter_config.json PEFT's but for the order of target_modules and
// layers_pattern (null, which PEFT reads to the same layers), and it
// loads back to the same parameters. (PeftModel.from_pretrained on the
// saved directory gives these logits: make_vit_lora_fixture.py --check
// … lora-layers.)
func TestViTLayersPEFT(t *testing.T) {
	m, ref := loadViT(t)
	src := filepath.Join(vitTiny, "lora-layers")
	pixels, _ := ref.Float32("pixel_values")
	want := peftLogits(t, src)
	base, _ := ref.Float64("logits_f64")
	for _, grouped := range []bool{false, true} {
		a, err := LoadViT(src, m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Layers(), []int{0, 2}) || len(a.targets) != 4 {
			t.Fatalf("layers %v, %d projections; want [0 2], 4", a.Layers(), len(a.targets))
		}
		if grouped && len(a.Params()) != 3 {
			t.Errorf("grouped: %d groups, want 3 (layers 0 and 2, the classifier)", len(a.Params()))
		}
		v := a.View(a.Params())
		if l1 := v.Layers[1]; l1.Q != nil || l1.V != nil || l1.O != nil || l1.Down != nil {
			t.Errorf("layer 1, which layers_to_transform leaves out, has LoRA terms")
		}
		got := adaptedLogits(t, a, m, pixels)
		if d := maxDiff(got, want); d > 2e-4 {
			t.Errorf("grouped %v: logits %.3g from PEFT's", grouped, d)
		}
		if d := maxDiff(got, base); d < 0.1 {
			t.Errorf("the adapter moves the logits by only %.3g: is it applied?", d)
		}
		dir := saveRoundTrip(t, a, m, src, grouped)
		ours := samePEFTConfig(t, dir, src, "[query value output.dense]")
		if got := fmt.Sprint(ours["layers_to_transform"]); got != "[0 2]" {
			t.Errorf("layers_to_transform %s, want [0 2]", got)
		}
	}
}

// TestLoadViTLayers: layers_to_transform and layers_pattern as PEFT 0.15
// reads them on a ViT (each checked with get_peft_model on the fixture's
// model): what loads to the parameters of the fixture's lora-layers, and
// what is refused, with the reason.
func TestLoadViTLayers(t *testing.T) {
	m, _ := loadViT(t)
	src := filepath.Join(vitTiny, "lora-layers")
	want, err := LoadViT(src, m, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit map[string]any
		err  string // "": loads as want
	}{
		{"no layers_pattern", map[string]any{"layers_pattern": nil}, ""}, // PEFT: the number after the last ".name."
		{"layers_pattern [] ", map[string]any{"layers_pattern": []string{}}, ""},
		{"layers_pattern a list", map[string]any{"layers_pattern": []string{"layers", "layer"}}, ""},
		{"an index twice", map[string]any{"layers_to_transform": []int{2, 0, 2}}, ""},
		// A full name matches whatever the layer, as PEFT's
		// check_target_module_exists does (the key in target_modules).
		{"full names", map[string]any{"target_modules": []string{"query", "value", "attention.output.dense", "vit.encoder.layer.0.output.dense", "vit.encoder.layer.2.output.dense"}}, ""},
		{"a full name of a layer left out", map[string]any{"target_modules": []string{"query", "value", "output.dense", "vit.encoder.layer.1.output.dense"}},
			"target_modules name output.dense in layers [0 1 2], not in layers_to_transform's [0 2]"},
		{"a decoder's layers_pattern", map[string]any{"layers_pattern": "layers"}, `layers_pattern ["layers"] finds no layer of a ViT`},
		{"layers_pattern a regular expression", map[string]any{"layers_pattern": "lay.r"}, `layers_pattern "lay.r" is a regular expression`},
		{"layers_pattern without layers", map[string]any{"layers_to_transform": nil}, "without layers_to_transform"},
		{"layers_pattern with layer 0 as an index", map[string]any{"layers_to_transform": 0}, "without layers_to_transform (it is 0)"}, // PEFT's `not 0`
		{"a layer past the model's", map[string]any{"layers_to_transform": []int{0, 2, 3}}, "layers_to_transform: layer 3 is not one of the model's 3 layers"},
		{"a layer the file lacks", map[string]any{"layers_to_transform": []int{0, 1, 2}}, `missing tensor "base_model.model.vit.encoder.layer.1.attention.attention.query.lora_A.weight"`},
		{"a layer the file has", map[string]any{"layers_to_transform": []int{0}}, "is for layer 2, which its layers_to_transform [0] leaves out"},
		{"a regular expression", map[string]any{"target_modules": `.*\.(query|value)`}, "PEFT refuses them together"},
		{"all-linear", map[string]any{"target_modules": "all-linear"}, "PEFT refuses them together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editedAdapter(t, src, func(c map[string]any) { maps.Copy(c, tc.edit) })
			got, err := LoadViT(dir, m, false)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && (!slices.Equal(got.Layers(), want.Layers()) || !slices.Equal(got.Params()[0], want.Params()[0])):
				t.Errorf("layers %v, parameters equal to the fixture's: %v", got.Layers(), slices.Equal(got.Params()[0], want.Params()[0]))
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestNewViTLayers: a fresh adapter on some layers (Options.Layers) has
// LoRA matrices in those layers only and the classifier, starts at the
// model's logits, and saves them with layers_to_transform, loading back
// to the same parameters; a layer the model lacks is refused.
func TestNewViTLayers(t *testing.T) {
	m, ref := loadViT(t)
	pixels, _ := ref.Float32("pixel_values")
	before, err := m.Logits(pixels, 4)
	if err != nil {
		t.Fatal(err)
	}
	all, err := NewViT(m, Options{R: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewViT(m, Options{R: 2, Seed: 1, Layers: []int{1}, GroupByLayer: true})
	if err != nil {
		t.Fatal(err)
	}
	head := m.Config.NumLabels * (m.Config.HiddenSize + 1)
	if perLayer := (all.Count() - head) / 3; a.Count() != perLayer+head || len(a.Params()) != 2 {
		t.Errorf("%d parameters in %d groups, want %d in 2 (one layer's and the classifier)", a.Count(), len(a.Params()), perLayer+head)
	}
	if got := adaptedLogits(t, a, m, pixels); !slices.Equal(got, before) {
		t.Errorf("a fresh adapter on layer 1 changes the logits")
	}
	for _, p := range a.Params() {
		for i := range p {
			p[i] += 0.01 * float32(i%7)
		}
	}
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	cfg := readJSON(t, filepath.Join(dir, "adapter_config.json"))
	if fmt.Sprint(cfg["layers_to_transform"]) != "[1]" || fmt.Sprint(cfg["target_modules"]) != "[query value]" {
		t.Errorf("saved layers_to_transform %v, target_modules %v; want [1], [query value]", cfg["layers_to_transform"], cfg["target_modules"])
	}
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors() {
		if strings.Contains(ti.Name, ".layer.0.") || strings.Contains(ti.Name, ".layer.2.") {
			t.Errorf("saved %s, of a layer not adapted", ti.Name)
		}
	}
	b, err := LoadViT(dir, m, true)
	if err != nil {
		t.Fatal(err)
	}
	for g := range a.Params() {
		if !slices.Equal(a.Params()[g], b.Params()[g]) {
			t.Errorf("group %d changed in a save and load", g)
		}
	}
	if _, err := NewViT(m, Options{R: 2, Layers: []int{3}}); err == nil || !strings.Contains(err.Error(), "layer 3 is not one of the model's 3 layers") {
		t.Errorf("layer 3 of 3: %v", err)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViTTargets: target_modules names as PEFT 0.15 matches them on
// ViTForImageClassification (checked with get_peft_model on the fixture:
// "output.dense" adapts attention.output.dense too, "dense" all three
// dense layers, full names one layer each), what is refused (PEFT refuses
// "attention", a container; "projection" is the patch embedding's
// convolution, which PEFT adapts and the forward cannot), and that the
// target_modules Save writes for any set of projections names that set
// again.
func TestViTTargets(t *testing.T) {
	m, _ := loadViT(t)
	c := &m.Config
	names := func(ps []model.Projection) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Module)
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		targets []string
		loaded  bool
		want    string // the modules, or the error's text
	}{
		{[]string{"query", "value"}, false, "attention.attention.query attention.attention.value"},
		{[]string{"value", "query", "value"}, false, "attention.attention.query attention.attention.value"},
		{[]string{"output.dense"}, false, "attention.output.dense output.dense"},
		{[]string{"dense"}, false, "attention.output.dense intermediate.dense output.dense"},
		{[]string{"attention.output.dense"}, false, "attention.output.dense"},
		{[]string{"intermediate.dense", "key"}, false, "attention.attention.key intermediate.dense"},
		{[]string{"attention.query", "attention.attention.key"}, false, "attention.attention.query attention.attention.key"},
		{[]string{AllLinear}, false, "attention.attention.query attention.attention.key attention.attention.value attention.output.dense intermediate.dense output.dense"},
		{[]string{"vit.encoder.layer.0.output.dense", "vit.encoder.layer.1.output.dense", "2.output.dense"}, true, "output.dense"},
		{[]string{"query", "classifier"}, true, "attention.attention.query"},
		{[]string{"query", "classifier"}, false, `"classifier": a ViT adapter trains the classifier whole`},
		{[]string{"vit.encoder.layer.0.output.dense"}, true, "target_modules name output.dense in 1 of the model's 3 layers"},
		{[]string{"attention"}, true, `target module "attention" names "vit.encoder.layer.0.attention", which is not a linear layer`},
		{[]string{"projection"}, false, `names "vit.embeddings.patch_embeddings.projection"`},
		{[]string{"layernorm_before"}, false, `names "vit.encoder.layer.0.layernorm_before"`},
		{[]string{"q_proj"}, false, `target module "q_proj" is no linear layer of the ViT's encoder`},
		{[]string{"query", AllLinear}, false, `give it alone`},
		{nil, false, "no target module"},
	} {
		ps, err := vitTargetsOf(c, Targets{Names: tc.targets}, tc.loaded, nil)
		got := names(ps)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("%q (loaded %v): %s, want %s", tc.targets, tc.loaded, got, tc.want)
		}
	}
	// target_modules as one string: PEFT's re.fullmatch of each module's
	// full name (the classifier, modules_to_save's, never LoRA's).
	for _, tc := range []struct{ re, want string }{
		{`.*\.(query|value)`, "attention.attention.query attention.attention.value"},
		{`.*\.(query|value)|classifier`, "attention.attention.query attention.attention.value"},
		{`vit\.encoder\.layer\.\d+\.(intermediate|output)\.dense`, "intermediate.dense output.dense"},
		{`.*dense`, "attention.output.dense intermediate.dense output.dense"},
		{`query`, `target_modules "query" (a regular expression, matched whole) matches no linear layer`},
		{`.*\.0\..*query`, "target_modules name attention.attention.query in 1 of the model's 3 layers"},
		{`.*attention.*`, `(a regular expression, matched whole) names "vit.encoder.layer.0.attention", which is not a linear layer`},
		{`.*(?=query)`, "a regular expression Go's regexp cannot read"},
	} {
		ps, err := vitTargetsOf(c, Targets{Regex: tc.re}, true, nil)
		got := names(ps)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("regular expression %q: %s, want %s", tc.re, got, tc.want)
		}
	}
	all := c.Projections()
	for set := 1; set < 1<<len(all); set++ {
		var ps []model.Projection
		for i, p := range all {
			if set&(1<<i) != 0 {
				ps = append(ps, p)
			}
		}
		saved := vitPEFTTargets(ps, []int{0, 1, 2})
		back, err := vitTargetsOf(c, Targets{Names: saved}, true, nil)
		if err != nil || names(back) != names(ps) {
			t.Errorf("%s saved as %q reads as %s (%v)", names(ps), saved, names(back), err)
		}
	}
}

// TestMergeViT: each PEFT-made fixture adapter (q/v, all-linear, some
// layers) merged into a copy of the ViT (PEFT's merge_and_unload: W +
// scale·B·A in float32, the classifier the adapter's copy) gives the
// logits of the model with the adapter attached within 2e-5 (float32
// rounding: the merged weight's sum and the low-rank term's round
// otherwise) and PEFT's float64 ones within 2e-4; the model merged from is
// unchanged, and the copy runs no low-rank term.
func TestMergeViT(t *testing.T) {
	m, ref := loadViT(t)
	pixels, _ := ref.Float32("pixel_values")
	before, err := m.Logits(pixels, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lora", "lora-all-linear", "lora-layers"} {
		src := filepath.Join(vitTiny, name)
		a, err := LoadViT(src, m, false)
		if err != nil {
			t.Fatal(err)
		}
		wantRef := ref
		if name != "lora" {
			if wantRef, err = safetensors.Open(filepath.Join(src, "reference.safetensors")); err != nil {
				t.Fatal(err)
			}
			defer wantRef.Close()
		}
		peft, _ := wantRef.Float64("lora_logits_f64")
		attached := adaptedLogits(t, a, m, pixels)
		merged := MergeViT(m, a.View(a.Params()))
		if len(merged.Adapter.Layers) != 0 || merged.Adapter.Classifier == nil {
			t.Errorf("%s: the merged copy's adapter has %d layers and classifier %v; want none, and the adapter's classifier", name, len(merged.Adapter.Layers), merged.Adapter.Classifier != nil)
		}
		got, err := merged.Logits(pixels, 4)
		if err != nil {
			t.Fatal(err)
		}
		FreeMergedViT(merged, m)
		var d float64
		for i := range got {
			d = max(d, math.Abs(float64(got[i]-attached[i])))
		}
		if d > 2e-5 {
			t.Errorf("%s: merged logits %.3g from the attached adapter's", name, d)
		}
		if d := maxDiff(got, peft); d > 2e-4 {
			t.Errorf("%s: merged logits %.3g from PEFT's", name, d)
		}
		if after, _ := m.Logits(pixels, 4); !slices.Equal(after, before) {
			t.Errorf("%s: merging changed the model merged from", name)
		}
		t.Logf("%s: merged %.3g from attached, %.3g from PEFT's float64", name, d, maxDiff(got, peft))
	}
}

// samePEFTConfig checks the adapter_config.json we saved in dir against
// PEFT's in src, key by key, but for base_model_name_or_path and the order
// of target_modules, which must read targets; it returns ours.
func samePEFTConfig(t *testing.T, dir, src, targets string) map[string]any {
	t.Helper()
	ours, peft := readJSON(t, filepath.Join(dir, "adapter_config.json")), readJSON(t, filepath.Join(src, "adapter_config.json"))
	for k, v := range ours {
		if k == "target_modules" || k == "base_model_name_or_path" {
			continue
		}
		if fmt.Sprint(peft[k]) != fmt.Sprint(v) {
			t.Errorf("adapter_config.json %s: %v, PEFT's %v", k, v, peft[k])
		}
	}
	if got := fmt.Sprint(ours["target_modules"]); got != targets {
		t.Errorf("target_modules %s, want %s", got, targets)
	}
	return ours
}

// peftLogits are the float64 logits PEFT's adapter in src gives the
// fixture's images (its reference.safetensors).
func peftLogits(t *testing.T, src string) []float64 {
	t.Helper()
	ref, err := safetensors.Open(filepath.Join(src, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Float64("lora_logits_f64")
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// BiasSpan names the classifier's bias within Params, joint and grouped
// by layer: the coordinates the view's classifier bias reads.
func TestViTBiasSpan(t *testing.T) {
	m, _ := loadViT(t)
	for _, grouped := range []bool{false, true} {
		a, err := NewViT(m, Options{R: 4, Alpha: 8, Seed: 3, GroupByLayer: grouped})
		if err != nil {
			t.Fatal(err)
		}
		g, lo, hi := a.BiasSpan()
		p := a.Params()
		for i := lo; i < hi; i++ {
			p[g][i] = float32(1000 + i - lo)
		}
		bias := a.View(p).ClassifierBias
		if len(bias) != hi-lo || bias[0] != 1000 || bias[len(bias)-1] != float32(999+hi-lo) {
			t.Errorf("grouped %v: BiasSpan (%d, %d, %d) is not the classifier's bias %v", grouped, g, lo, hi, bias)
		}
	}
}
