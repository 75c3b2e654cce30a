package lora

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// TestPEFTFixture loads the PEFT adapters written by PEFT 0.15.2 and checks
// the logits, losses and greedy generations against PEFT's own.
func TestPEFTFixture(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen3-tiny"} {
		t.Run(name, func(t *testing.T) {
			dir := fixture.Dir(t, "fixtures", "models", name)
			m, err := model.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadPEFT(filepath.Join(dir, "lora"), m)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Scale() != 2 {
				t.Fatalf("scale %v, want alpha/r = 8/4 = 2", cfg.Scale())
			}
			ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
			shape := ref.Shape("input_ids")
			mask := ref.Ints("attention_mask")
			out, err := m.Forward(model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids"), Mask: mask},
				model.Options{Logits: true, Labels: ref.Ints("labels")})
			if err != nil {
				t.Fatal(err)
			}
			d, at := fixture.MaxAbsDiff(out.Logits, ref.F64("lora_logits_f64"), m.VocabSize, func(r int) bool { return mask[r] == 1 })
			if d > 3e-4 {
				t.Errorf("LoRA logits: max |Δ| %.3g at %d > 3e-4", d, at)
			}
			t.Logf("LoRA logits max |Δ| = %.3g", d)
			for s, want := range ref.F64("lora_loss_per_seq_f64") {
				if got := out.LossPerSeq[s]; math.Abs(got-want) > 2e-5 {
					t.Errorf("LoRA loss of sequence %d: %.9g, want %.9g", s, got, want)
				}
			}
			for g, prefix := range []string{"gen0_", "gen1_"} {
				prompt := ref.Ints(prefix + "prompt")
				want := ref.Ints("lora_" + prefix + "new_tokens")
				got, err := m.Generate(model.Input{B: 1, T: len(prompt), Tokens: prompt}, model.GenerateOptions{MaxNewTokens: len(want), StopIDs: []int{}})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got[0], want) {
					t.Errorf("generation %d with adapter: %v, want %v", g, got[0], want)
				}
			}
		})
	}
}

// TestReadLayers: layers_to_transform as PEFT saves it (an index, or a
// list) and layers_pattern as these models' layers are named; anything
// else is refused by name.
func TestReadLayers(t *testing.T) {
	for _, tc := range []struct {
		json string
		want []int
		err  string
	}{
		{`"layers_to_transform": null`, nil, ""},
		{`"layers_to_transform": 3`, []int{3}, ""},
		{`"layers_to_transform": [4, 2, 4], "layers_pattern": "layers"`, []int{2, 4}, ""},
		{`"layers_to_transform": [1], "layers_pattern": ["layers"]`, []int{1}, ""},
		{`"layers_to_transform": []`, nil, ""}, // every layer, as PEFT reads (and saves) it
		{`"layers_to_transform": [1.5]`, nil, "want a layer index or a list of them"},
		{`"layers_to_transform": "all"`, nil, "want a layer index or a list of them"},
		{`"layers_to_transform": [1], "layers_pattern": "h"`, nil, `layers_pattern "h" is not supported`},
		{`"layers_to_transform": [1], "layers_pattern": ["layers", "h"]`, nil, `layers_pattern ["layers" "h"] is not supported`},
		{`"layers_to_transform": [1], "layers_pattern": [""]`, nil, `layers_pattern [""] is not supported`},
		{`"layers_to_transform": [1], "layers_pattern": []`, []int{1}, ""},
		{`"layers_to_transform": [1], "layers_pattern": [3]`, nil, "want a module list's name"},
		// PEFT 0.15's LoraConfig refuses a pattern without layers (null, [] or 0).
		{`"layers_pattern": "layers"`, nil, "without layers_to_transform"},
		{`"layers_to_transform": [], "layers_pattern": "layers"`, nil, "without layers_to_transform"},
		{`"layers_to_transform": 0, "layers_pattern": "layers"`, nil, "without layers_to_transform (it is 0)"},
		{`"layers_to_transform": 0, "layers_pattern": null`, []int{0}, ""},
	} {
		path := filepath.Join(t.TempDir(), "adapter_config.json")
		if err := os.WriteFile(path, []byte(`{"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"], `+tc.json+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ReadPEFTConfig(path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.json, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.json, err, tc.err)
		case err == nil && !slices.Equal(c.Layers, tc.want):
			t.Errorf("%s: layers %v, want %v", tc.json, c.Layers, tc.want)
		}
	}
}

// TestTargetsAllLinearAnyCase: target_modules "All-Linear" is all-linear,
// as PEFT 0.15 reads it (_maybe_include_all_linear_layers lower-cases the
// string), not an expression that matches no module.
func TestTargetsAllLinearAnyCase(t *testing.T) {
	for _, s := range []string{`"all-linear"`, `"All-Linear"`, `"ALL-LINEAR"`} {
		var got Targets
		if err := json.Unmarshal([]byte(s), &got); err != nil || got.Regex != "" || !slices.Equal(got.Names, []string{AllLinear}) {
			t.Errorf("%s: %+v, %v; want all-linear", s, got, err)
		}
	}
}
