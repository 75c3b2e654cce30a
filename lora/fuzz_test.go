package lora

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
	"github.com/meazo-go/meazo/model"
)

// FuzzPEFTConfig: adapter_config.json through ReadPEFTConfig, then the
// adapter shape Load allocates from it before reading any tensor: an error
// naming the file or an adapter, never a panic or gigabytes. (Its seeds run
// in every go test; make fuzz fuzzes it.)
func FuzzPEFTConfig(f *testing.F) {
	f.Add([]byte(`{"peft_type":"LORA","task_type":"CAUSAL_LM","r":16,"lora_alpha":16,"lora_dropout":0.0,"target_modules":["q_proj","v_proj"],"bias":"none","use_rslora":false,"modules_to_save":null,"base_model_name_or_path":"m"}`))
	f.Add([]byte(`{"peft_type":"LORA","r":1,"target_modules":[]}`))
	f.Add([]byte(`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":"q_proj","use_rslora":true,"layers_to_transform":null}`))
	m := &model.Model{Config: model.Config{NumLayers: 3, HiddenSize: 64, NumHeads: 4, NumKVHeads: 2, HeadDim: 16}}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "adapter_config.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ReadPEFTConfig(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if a, err := newShape(m, Options{R: c.R, Alpha: c.LoraAlpha, Targets: c.TargetModules.Names, RSLoRA: c.UseRSLoRA}); err == nil {
			a.Scale()
			a.Count()
		}
	})
}

// FuzzLoadDir: a PEFT LoRA adapter directory from a stranger, its
// adapter_config.json and adapter_model.safetensors both chosen by the
// fuzzer, through Load on a small model and, when it loads, a forward pass
// of the adapted model: an error naming the file, never a panic, a hang or
// gigabytes (fuzzguard). The seeds are adapters Save wrote: rank 2 and 4,
// q_proj alone and with v_proj, rsLoRA, in float32.
func FuzzLoadDir(f *testing.F) {
	c := tinyConfig()
	c.NumLayers = 1
	m, err := model.NewRandom(c, 1, 0.2)
	if err != nil {
		f.Fatal(err)
	}
	for _, o := range []Options{{R: 2, Targets: []string{"q_proj"}}, {R: 4, Alpha: 8, RSLoRA: true, Seed: 3}} {
		a, err := New(m, o)
		if err != nil {
			f.Fatal(err)
		}
		dir := f.TempDir()
		if err := a.Save(dir); err != nil {
			f.Fatal(err)
		}
		var files [2][]byte
		for i, name := range []string{"adapter_config.json", "adapter_model.safetensors"} {
			if files[i], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(files[0], files[1], false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, cfg, weights []byte, grouped bool) {
		for name, b := range map[string][]byte{"adapter_config.json": cfg, "adapter_model.safetensors": weights} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fuzzguard.Run(func() {
			a, err := Load(dir, m, grouped)
			if err != nil {
				if !strings.Contains(err.Error(), dir) {
					t.Fatalf("the error does not name the adapter: %v", err)
				}
				return
			}
			adapted := a.Merge(m)
			defer FreeMerged(adapted, m)
			in := model.Input{B: 1, T: 2, Tokens: []int{0, 1}}
			if _, err := adapted.Forward(in, model.Options{Labels: []int{-100, 1}}); err != nil {
				t.Fatalf("an adapter that loads does not compute: %v", err)
			}
		})
	})
}
