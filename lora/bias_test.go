package lora

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// biasFixtures are model/testdata/qwen2's models (scripts/make_qwen2_fixtures.py):
// their q_proj and v_proj have biases (but mistral-tiny's), and each holds a PEFT 0.15 LoRA on
// them (lora/) with the logits PEFT computes with it.
var biasFixtures = []string{"qwen2-tiny", "qwen2-tiny-untied", "llama-bias-tiny", "qwen3-bias-tiny", "mistral-tiny"}

func biasFixtureDir(name string) string {
	return filepath.Join("..", "model", "testdata", "qwen2", name)
}

// TestBiasFixturesPEFTFormat: on a base whose q_proj and v_proj have biases
// (PEFT keeps the base Linear's bias and adds its term to that output), an
// adapter meazo-go makes is saved in the very layout PEFT saved the
// fixture's (tensor names, shapes and dtypes; the config's keys); PEFT's
// adapter loads as a trainable one, saves back to the same tensors, and
// gives PEFT's logits (its float64 reference) both applied and merged into
// the weights (the biases untouched).
func TestBiasFixturesPEFTFormat(t *testing.T) {
	for _, name := range biasFixtures {
		t.Run(name, func(t *testing.T) {
			dir := biasFixtureDir(name)
			m, err := model.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := New(m, Options{R: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			saved := t.TempDir()
			if err := ours.Save(saved); err != nil {
				t.Fatal(err)
			}
			sameLayout(t, filepath.Join(saved, "adapter_model.safetensors"), filepath.Join(dir, "lora", "adapter_model.safetensors"))
			sameConfig(t, filepath.Join(saved, "adapter_config.json"), filepath.Join(dir, "lora", "adapter_config.json"))

			theirs, err := Load(filepath.Join(dir, "lora"), m, false)
			if err != nil {
				t.Fatal(err)
			}
			resaved := t.TempDir()
			if err := theirs.Save(resaved); err != nil {
				t.Fatal(err)
			}
			a, b := fixture.Tensors(t, filepath.Join(dir, "lora", "adapter_model.safetensors")), fixture.Tensors(t, filepath.Join(resaved, "adapter_model.safetensors"))
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("PEFT's adapter has %d tensors, saved back %d", len(a), len(b))
			}
			for k, v := range a {
				if !slices.Equal(v, b[k]) {
					t.Errorf("%s: saved back with other values", k)
				}
			}

			ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
			shape, mask := ref.Shape("input_ids"), ref.Ints("attention_mask")
			in := model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids"), Mask: mask}
			real := func(r int) bool { return mask[r] == 1 }
			want := ref.F64("lora_logits_f64")
			theirs.Attach(m)
			if d, _ := fixture.MaxAbsDiff(logits(t, m, in), want, m.VocabSize, real); !(d <= 3e-4) {
				t.Errorf("PEFT's adapter applied: logits %.3g from PEFT's (float64), want ≤ 3e-4", d)
			}
			merged := theirs.Merge(m)
			if d, _ := fixture.MaxAbsDiff(logits(t, merged, in), want, m.VocabSize, real); !(d <= 3e-4) {
				t.Errorf("PEFT's adapter merged: logits %.3g from PEFT's (float64), want ≤ 3e-4", d)
			} else {
				t.Logf("PEFT's adapter merged: logits within %.3g of PEFT's (float64)", d)
			}
			FreeMerged(merged, m)
		})
	}
}

// sameLayout: the two adapter files hold tensors of the same names, shapes
// and dtypes.
func sameLayout(t *testing.T, ours, peft string) {
	t.Helper()
	layout := func(path string) map[string]safetensors.TensorInfo {
		f, err := safetensors.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out := map[string]safetensors.TensorInfo{}
		for _, info := range f.Tensors() {
			out[info.Name] = info
		}
		return out
	}
	a, b := layout(ours), layout(peft)
	if len(a) != len(b) {
		t.Errorf("meazo-go saved %d tensors, PEFT %d", len(a), len(b))
	}
	for name, info := range b {
		if got, ok := a[name]; !ok || got.Dtype != info.Dtype || !slices.Equal(got.Shape, info.Shape) {
			t.Errorf("%s: meazo-go saved %+v, PEFT %+v", name, got, info)
		}
	}
}

// sameConfig: the adapter_config.json keys that say what the adapter is
// agree with PEFT's.
func sameConfig(t *testing.T, ours, peft string) {
	t.Helper()
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := read(ours), read(peft)
	for _, k := range []string{"peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "bias", "fan_in_fan_out", "use_rslora", "use_dora"} {
		if ja, jb := mustJSON(t, a[k]), mustJSON(t, b[k]); ja != jb {
			t.Errorf("adapter_config.json %s: meazo-go %s, PEFT %s", k, ja, jb)
		}
	}
	ta, tb := a["target_modules"].([]any), b["target_modules"].([]any)
	if !slices.Equal(sortedStrings(ta), sortedStrings(tb)) {
		t.Errorf("target_modules: meazo-go %v, PEFT %v", ta, tb)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sortedStrings(v []any) []string {
	var s []string
	for _, x := range v {
		s = append(s, x.(string))
	}
	slices.Sort(s)
	return s
}
