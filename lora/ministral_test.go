package lora

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// TestMinistral14BCounts: the paper's Ministral-3 14B run has 11,403,264
// trainable of 13,945,031,680 parameters with LoRA r=16 on q_proj and
// v_proj. Those are PEFT's counts on the whole Mistral3ForConditionalGeneration:
// its target_modules match the Pixtral vision tower's q_proj and v_proj too,
// and the total holds the vision tower and the projector. meazo trains the
// language model's adapters alone (the vision tower's get no signal from
// text); the test derives both figures from the config the loader reads.
func TestMinistral14BCounts(t *testing.T) {
	path := "../model/testdata/ministral3/Ministral-3-14B-Instruct-2512-BF16.config.json"
	c, err := model.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	const r = 16
	d, qd, kvd := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	text := c.NumLayers * (r*(d+qd) + r*(d+kvd)) // what lora.New makes for q_proj, v_proj
	lm := c.VocabSize*d*2 + d + c.NumLayers*(d*(2*qd+2*kvd)+3*d*c.IntermediateSize+2*d)

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		V map[string]any `json:"vision_config"`
		S float64        `json:"spatial_merge_size"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	vh, vi, vl := int(f.V["hidden_size"].(float64)), int(f.V["intermediate_size"].(float64)), int(f.V["num_hidden_layers"].(float64))
	patch, ch, merge := int(f.V["patch_size"].(float64)), int(f.V["num_channels"].(float64)), int(f.S)
	visionLoRA := vl * 2 * r * (vh + vh)
	// Pixtral: patch_conv, ln_pre, per layer q/k/v/o, gated MLP and two norms;
	// the projector: its norm, the patch merger and linear_1, linear_2 (no biases).
	vision := vh*ch*patch*patch + vh + vl*(4*vh*vh+3*vh*vi+2*vh)
	projector := vh + vh*merge*merge*vh + vh*d + d*d

	for _, x := range []struct {
		what      string
		got, want int
	}{
		{"language model parameters", lm, 13_506_073_600},
		{"language model LoRA (meazo trains these)", text, 9_830_400},
		{"PEFT's trainable count (with the vision tower's q/v)", text + visionLoRA, 11_403_264},
		{"parameters of the checkpoint", lm + vision + projector, 13_945_031_680},
	} {
		if x.got != x.want {
			t.Errorf("%s: %d, want %d", x.what, x.got, x.want)
		}
	}
	m, err := model.NewRandom(tinyOf(c), 1, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{R: r, Alpha: 32, Targets: []string{"q_proj", "v_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	tc := tinyOf(c)
	if want := tc.NumLayers * (r*(tc.HiddenSize+tc.NumHeads*tc.HeadDim) + r*(tc.HiddenSize+tc.NumKVHeads*tc.HeadDim)); a.Count() != want {
		t.Errorf("lora.New on a Ministral model: %d parameters, the formula above %d", a.Count(), want)
	}
}

// tinyOf shrinks c keeping its kind (YaRN, llama-4 scale, GQA, head_dim).
func tinyOf(c *model.Config) *model.Config {
	t := *c
	t.VocabSize, t.HiddenSize, t.IntermediateSize, t.NumLayers, t.NumHeads, t.NumKVHeads, t.HeadDim = 64, 32, 48, 2, 4, 2, 16
	return &t
}

// TestMinistralPEFTNames: on Ministral-3's checkpoint
// (Mistral3ForConditionalGeneration) an adapter is saved under PEFT's keys
// of the language model's layers (model.language_model.layers, where PEFT
// finds q_proj/v_proj in transformers 5's module tree) and loads back; an
// adapter PEFT made on the whole checkpoint, which also holds the vision
// tower's LoRA matrices, loads with those skipped; one keyed as a causal
// LM's (model.layers) is refused, naming the tensor it lacks.
func TestMinistralPEFTNames(t *testing.T) {
	m, err := model.Load("../model/testdata/ministral3/ministral3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{R: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "adapter_model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var tensors []safetensors.Tensor
	for _, info := range f.Tensors() {
		if !strings.HasPrefix(info.Name, "base_model.model.model.language_model.layers.") {
			t.Errorf("saved tensor %q is not under the language model's layers", info.Name)
		}
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, safetensors.F32Tensor(info.Name, info.Shape, v))
	}
	f.Close()
	if len(tensors) != 4*m.NumLayers {
		t.Fatalf("%d tensors saved, want %d", len(tensors), 4*m.NumLayers)
	}
	back, err := Load(dir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(back.Params(), a.Params(), slices.Equal) {
		t.Error("the adapter read back differs from the one saved")
	}

	vision := append(slices.Clone(tensors),
		safetensors.F32Tensor("base_model.model.model.vision_tower.transformer.layers.0.attention.q_proj.lora_A.weight", []int{4, 16}, make([]float32, 64)))
	if err := safetensors.WriteFile(path, vision, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, m, false); err != nil {
		t.Errorf("an adapter with the vision tower's LoRA matrices: %v", err)
	}

	var causal []safetensors.Tensor
	for _, x := range tensors {
		x.Name = strings.Replace(x.Name, ".language_model.layers.", ".layers.", 1)
		causal = append(causal, x)
	}
	if err := safetensors.WriteFile(path, causal, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, m, false); err == nil || !strings.Contains(err.Error(), "language_model.layers.0.self_attn.q_proj.lora_A") {
		t.Errorf("an adapter keyed as a causal LM's: %v, want an error naming the missing language-model tensor", err)
	}
}
