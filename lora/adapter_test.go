package lora

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// TestTrainableCounts checks the paper's trainable-parameter counts on the
// published full-size configs (shape only: no weights are loaded).
func TestTrainableCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"Llama-3.2-1B", 1703936},
		{"Qwen3-0.6B", 2293760},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := model.LoadConfig(fixture.Dir(t, "fixtures", "models", "full-configs", tc.name, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			m := &model.Model{Config: *cfg}
			for _, grouped := range []bool{false, true} {
				a, err := newShape(m, Options{R: 16, Alpha: 16, Targets: []string{"q_proj", "v_proj"}, GroupByLayer: grouped})
				if err != nil {
					t.Fatal(err)
				}
				if a.Count() != tc.want {
					t.Errorf("grouped=%v: %d trainable parameters, want %d", grouped, a.Count(), tc.want)
				}
				if grouped && len(a.Params()) != cfg.NumLayers {
					t.Errorf("%d groups, want one per layer (%d)", len(a.Params()), cfg.NumLayers)
				}
			}
		})
	}
}

func TestNewIsPEFTInit(t *testing.T) {
	m, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{Seed: 3, Targets: []string{AllLinear}})
	if err != nil {
		t.Fatal(err)
	}
	a.eachMatrix(func(l int, tgt model.Projection, ab string, v []float32) {
		bound := 1 / math.Sqrt(float64(tgt.In)) // down_proj's input is the MLP's width
		for _, x := range v {
			if ab == "B" && x != 0 {
				t.Fatalf("layer %d %s lora_B not zero", l, tgt.Name)
			}
			if ab == "A" && (math.Abs(float64(x)) > bound || x == 0) {
				t.Fatalf("layer %d %s lora_A value %g outside U(-1/√in, 1/√in)", l, tgt.Name, x)
			}
		}
	})
	// With B = 0 the adapted model equals the base model.
	in := model.Input{B: 1, T: 4, Tokens: []int{3, 1, 4, 1}}
	base, _ := m.Forward(in, model.Options{Logits: true})
	a.Attach(m)
	adapted, _ := m.Forward(in, model.Options{Logits: true})
	if !slices.Equal(base.Logits, adapted.Logits) {
		t.Error("a freshly initialised adapter changes the logits")
	}
}

// TestSaveLoadPEFTFormat writes an adapter and checks PEFT's key names,
// shapes and config fields, then loads it back, grouped and not.
func TestSaveLoadPEFTFormat(t *testing.T) {
	m, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Params()[0] { // make B non-zero too
		a.Params()[0][i] += float32(i%7) * 1e-3
	}
	a.SetBaseModel("meta-llama/Llama-3.2-1B")
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := len(f.Tensors()); n != 4*m.NumLayers {
		t.Errorf("%d tensors, want %d", n, 4*m.NumLayers)
	}
	for l := 0; l < m.NumLayers; l++ {
		for _, want := range []struct {
			name  string
			shape []int
		}{
			{tensorName(m.LayersName(), l, "self_attn.q_proj", "A"), []int{16, m.HiddenSize}},
			{tensorName(m.LayersName(), l, "self_attn.q_proj", "B"), []int{m.NumHeads * m.HeadDim, 16}},
			{tensorName(m.LayersName(), l, "self_attn.v_proj", "A"), []int{16, m.HiddenSize}},
			{tensorName(m.LayersName(), l, "self_attn.v_proj", "B"), []int{m.NumKVHeads * m.HeadDim, 16}},
		} {
			info, ok := f.Info(want.name)
			if !ok || !slices.Equal(info.Shape, want.shape) || info.Dtype != "F32" {
				t.Errorf("tensor %s: %+v, want F32 %v", want.name, info, want.shape)
			}
		}
	}
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 16.0, "lora_alpha": 16.0,
		"lora_dropout": 0.0, "bias": "none", "base_model_name_or_path": "meta-llama/Llama-3.2-1B"} {
		if cfg[k] != v {
			t.Errorf("adapter_config.json %s = %v, want %v", k, cfg[k], v)
		}
	}
	if tm, _ := cfg["target_modules"].([]any); len(tm) != 2 || tm[0] != "q_proj" || tm[1] != "v_proj" {
		t.Errorf("target_modules = %v", cfg["target_modules"])
	}
	for _, grouped := range []bool{false, true} {
		back, err := Load(dir, m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Concat(back.Params()...), a.Params()[0]) {
			t.Errorf("grouped=%v: loaded parameters differ from saved ones", grouped)
		}
	}
	// The same file through the PEFT loader gives the same logits as the
	// trainable adapter, and merging gives them too (up to rounding).
	in := model.Input{B: 1, T: 5, Tokens: []int{3, 1, 4, 1, 5}}
	a.Attach(m)
	want, _ := m.Forward(in, model.Options{Logits: true})
	if _, err := LoadPEFT(dir, m); err != nil {
		t.Fatal(err)
	}
	got, _ := m.Forward(in, model.Options{Logits: true})
	if !slices.Equal(got.Logits, want.Logits) {
		t.Error("LoadPEFT of a saved adapter gives other logits than the adapter itself")
	}
	merged, _ := a.Merge(m).Forward(in, model.Options{Logits: true})
	for i := range merged.Logits {
		if math.Abs(float64(merged.Logits[i]-want.Logits[i])) > 1e-4 {
			t.Fatalf("merged logits differ at %d: %g vs %g", i, merged.Logits[i], want.Logits[i])
		}
	}
}

// TestFixtureAdapterTrainable loads the PEFT fixture as a trainable adapter
// and reproduces the reference logits through View.
func TestFixtureAdapterTrainable(t *testing.T) {
	dir := fixture.Dir(t, "fixtures", "models", "qwen3-tiny")
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Load(filepath.Join(dir, "lora"), m, true)
	if err != nil {
		t.Fatal(err)
	}
	a.Attach(m)
	ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
	shape := ref.Shape("input_ids")
	mask := ref.Ints("attention_mask")
	out, err := m.Forward(model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids"), Mask: mask}, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := fixture.MaxAbsDiff(out.Logits, ref.F64("lora_logits_f64"), m.VocabSize, func(r int) bool { return mask[r] == 1 }); d > 3e-4 {
		t.Errorf("LoRA logits through the trainable adapter: max |Δ| %.3g > 3e-4", d)
	}
}

// tinyAdapter is a random tinyConfig model of the given layers and a
// fresh rank-2 adapter (q_proj, v_proj) on it, seeded by seed.
func tinyAdapter(t *testing.T, layers int, seed uint64) (*model.Model, *Adapter) {
	t.Helper()
	c := tinyConfig()
	c.NumLayers = layers
	m, err := model.NewRandom(c, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{R: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return m, a
}

func tinyConfig() *model.Config {
	return &model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 5e5, TieEmbeddings: true, BOSTokenID: -1,
	}
}

// TestMergeStacked: merging into a model whose q|k|v and gate|up are
// stacked matrices (tensor.Stacker) gives the logits, bit for bit, of
// merging into the same model with separate matrices, and those of the
// adapter attached, for an adapter on q_proj and v_proj and one on every
// projection.
func TestMergeStacked(t *testing.T) {
	in := model.Input{B: 1, T: 6, Tokens: []int{3, 1, 4, 1, 5, 9}}
	for _, targets := range [][]string{nil, {AllLinear}} {
		var logits [2][]float32
		for i, stack := range []bool{false, true} {
			be := cpu.New(cpu.Options{Threads: 1, StackProjections: stack})
			m, err := model.NewRandomWith(tinyConfig(), 1, 0.2, model.LoadOptions{Backend: be})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Layers[0].Attn.QKV != nil && m.Layers[0].MLP.GateUp != nil; got != stack {
				t.Fatalf("stack %v: the model has stacked q|k|v and gate|up: %v", stack, got)
			}
			a, err := New(m, Options{Seed: 3, Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range a.Params() { // B is zero at PEFT's init: give it values
				for j := range p {
					p[j] = float32(math.Sin(float64(j))) * 0.1
				}
			}
			merged := a.Merge(m)
			out, err := merged.Forward(in, model.Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			logits[i] = out.Logits
			a.Attach(m)
			want, _ := m.Forward(in, model.Options{Logits: true})
			for j := range want.Logits {
				if d := math.Abs(float64(out.Logits[j] - want.Logits[j])); d > 1e-4 {
					t.Fatalf("%v, stack %v: merged logit %d is %g, the adapter's %g", a.Targets(), stack, j, out.Logits[j], want.Logits[j])
				}
			}
			FreeMerged(merged, m)
		}
		if !slices.Equal(logits[0], logits[1]) {
			t.Errorf("%v: merged logits differ between the stacked and the separate matrices", targets)
		}
	}
}

// TestLoadRefusesAnotherModelsAdapter: an adapter with tensors the model has
// no place for (a layer it lacks) is refused, not applied in part.
func TestLoadRefusesAnotherModelsAdapter(t *testing.T) {
	deep := tinyConfig()
	deep.NumLayers = 3
	big, err := model.NewRandom(deep, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(big, Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	small, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, small, false); err == nil || !strings.Contains(err.Error(), `"base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight" is for layer 2, and the model has 2 layers: an adapter for another model?`) {
		t.Errorf("3-layer adapter on a 2-layer model: %v", err)
	}
	if _, err := Load(dir, big, false); err != nil {
		t.Errorf("on its own model: %v", err)
	}

	// Weights PEFT saves besides the LoRA matrices (modules_to_save: a
	// trained lm_head) are not dropped either.
	st, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var tensors []safetensors.Tensor
	for _, info := range st.Tensors() {
		v, err := st.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, safetensors.F32Tensor(info.Name, info.Shape, v))
	}
	st.Close()
	head := safetensors.F32Tensor("base_model.model.lm_head.weight", []int{64, 32}, make([]float32, 64*32))
	if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), append(tensors, head), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, big, false); err == nil || !strings.Contains(err.Error(), `"base_model.model.lm_head.weight" is not supported (only the LoRA matrices of [q_proj v_proj])`) {
		t.Errorf("an adapter with an lm_head: %v", err)
	}
	cfg := filepath.Join(dir, "adapter_config.json")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), `"modules_to_save": null`, `"modules_to_save": ["lm_head"]`, 1)), 0o644)
	if _, err := Load(dir, big, false); err == nil || !strings.Contains(err.Error(), "modules_to_save [lm_head] is not supported") ||
		strings.Contains(err.Error(), "ViT") {
		t.Errorf("modules_to_save: %v", err)
	}
	os.WriteFile(cfg, []byte(strings.Replace(string(b), `"modules_to_save": null`, `"modules_to_save": ["classifier"]`, 1)), 0o644)
	if _, err := Load(dir, big, false); err == nil || !strings.Contains(err.Error(), "an image classifier's (a ViT), not a decoder model's") {
		t.Errorf("a ViT's adapter on a decoder model: %v", err)
	}

	// An absurd rank (fuzzing: r = 2^56+1 panicked in make, r = 10^6 asked
	// 1.4 GB) is refused before anything is allocated for it.
	os.WriteFile(cfg, []byte(strings.Replace(string(b), `"r": 16`, `"r": 72057594037927937`, 1)), 0o644)
	if _, err := Load(dir, big, false); err == nil || !strings.Contains(err.Error(), "rank 72057594037927937 is above the model's hidden size 32") {
		t.Errorf("r = 2^56+1: %v", err)
	}
}

// TestLoadNamesAnotherWidthsModel: an adapter saved for a model of another
// hidden size (same layers, same rank) is refused with the shapes, and the
// error says what that means and which base model the adapter names, so
// that a user who passed the wrong --model knows what to pass.
func TestLoadNamesAnotherWidthsModel(t *testing.T) {
	narrow, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(narrow, Options{R: 8, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	a.base = "models/narrow"
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	wideCfg := tinyConfig()
	wideCfg.HiddenSize, wideCfg.HeadDim = 64, 16
	wide, err := model.NewRandom(wideCfg, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir, wide, false)
	for _, want := range []string{
		`tensor "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" has shape [8 32], want [8 64]`,
		`an adapter for another model (its input has 32 features, this model's 64)? Its adapter_config.json names the base model "models/narrow"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a width-32 model's adapter on a width-64 model: got %v, want it to contain %q", err, want)
		}
	}
}

// TestLoadChecksShapesBeforeAllocating: an adapter_config.json whose rank
// is an 8B model's hidden size, beside a file of rank-8 matrices, is an
// error naming the first matrix of another shape, before the 7 GB of
// parameters that rank means are allocated.
func TestLoadChecksShapesBeforeAllocating(t *testing.T) {
	m := &model.Model{Config: model.Config{Architecture: "LlamaForCausalLM", NumLayers: 32, HiddenSize: 4096, NumHeads: 32, NumKVHeads: 8, HeadDim: 128}}
	dir := t.TempDir()
	cfg := `{"peft_type":"LORA","r":4096,"lora_alpha":16,"target_modules":["q_proj","v_proj"]}`
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	a := safetensors.F32Tensor(name, []int{8, 4096}, make([]float32, 8*4096))
	if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []safetensors.Tensor{a}, nil); err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err := Load(dir, m, false)
	runtime.ReadMemStats(&ms)
	if want := `tensor "` + name + `" has shape [8 4096], want [4096 4096]`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
	if mb := float64(ms.TotalAlloc-before) / (1 << 20); mb > 32 {
		t.Errorf("%.0f MiB allocated before the error", mb)
	}
}

// TestLayers: an adapter on some layers (PEFT's layers_to_transform) holds
// their parameters alone, in increasing layer order, updates no other
// layer, starts its perturbed points at its first layer (prefix caching),
// saves layers_to_transform and loads back; a layer the model lacks, one
// named twice or none are refused.
func TestLayers(t *testing.T) {
	c := tinyConfig()
	c.NumLayers = 3
	m, err := model.NewRandom(c, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	all, err := New(m, Options{R: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, grouped := range []bool{false, true} {
		a, err := New(m, Options{R: 2, Layers: []int{2, 1}, GroupByLayer: grouped, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Layers(); !slices.Equal(got, []int{1, 2}) {
			t.Errorf("Layers() = %v, want [1 2]", got)
		}
		if a.Count() != all.Count()*2/3 {
			t.Errorf("%d parameters, want two thirds of every layer's %d", a.Count(), all.Count())
		}
		v := a.View(a.Params())
		if v.Layers[0].Q != nil || v.Layers[0].V != nil || v.Layers[1].Q == nil || v.Layers[2].V == nil {
			t.Errorf("layer 0 adapted or layer 1/2 not: %+v", v.Layers)
		}
		if want := map[bool][]int{false: {1}, true: {1, 2}}[grouped]; a.GroupLayer(0) != want[0] || grouped && a.GroupLayer(1) != want[1] {
			t.Errorf("grouped %v: groups start at layers %d, %d; want %v", grouped, a.GroupLayer(0), a.GroupLayer(len(a.Params())-1), want)
		}
		for _, p := range a.Params() {
			for i := range p {
				p[i] = float32(i%7) * 0.01
			}
		}
		dir := t.TempDir()
		if err := a.Save(dir); err != nil {
			t.Fatal(err)
		}
		cfg, err := ReadPEFTConfig(filepath.Join(dir, "adapter_config.json"))
		if err != nil || !slices.Equal(cfg.Layers, []int{1, 2}) {
			t.Fatalf("saved layers_to_transform %v (%v), want [1 2]", cfg, err)
		}
		b, err := Load(dir, m, grouped)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(a.Params(), b.Params(), slices.Equal) || !slices.Equal(b.Layers(), []int{1, 2}) {
			t.Error("the loaded adapter differs from the saved one")
		}
	}
	for _, tc := range []struct {
		layers []int
		want   string
	}{
		{[]int{3}, "layer 3 is not one of the model's 3 layers (0 to 2)"},
		{[]int{-1}, "layer -1 is not one of the model's 3 layers"},
		{[]int{1, 1}, "layer 1 is named twice"},
		{[]int{}, "no layer to adapt"},
	} {
		if _, err := New(m, Options{Layers: tc.layers}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("layers %v: %v, want %q", tc.layers, err, tc.want)
		}
	}
}

// TestLoadEmptyLayersToTransform: PEFT 0.15 adapts every layer when
// layers_to_transform is an empty list, and saves it so
// (get_peft_model(model, LoraConfig(layers_to_transform=[])) on llama-tiny
// wraps q_proj in all three layers and writes "layers_to_transform": []):
// such an adapter loads as one on every layer.
func TestLoadEmptyLayersToTransform(t *testing.T) {
	m, a := tinyAdapter(t, 3, 3)
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	setConfigKey(t, dir, "layers_to_transform", []int{})
	got, err := Load(dir, m, false)
	if err != nil {
		t.Fatalf("layers_to_transform []: %v", err)
	}
	if !slices.Equal(got.Layers(), []int{0, 1, 2}) || !slices.Equal(got.Params()[0], a.Params()[0]) {
		t.Errorf("loaded layers %v (parameters equal: %v), want every layer", got.Layers(), slices.Equal(got.Params()[0], a.Params()[0]))
	}
}
