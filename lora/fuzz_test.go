package lora

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		if a, err := newShape(m, Options{R: c.R, Alpha: c.LoraAlpha, Targets: c.TargetModules, RSLoRA: c.UseRSLoRA}); err == nil {
			a.Scale()
			a.Count()
		}
	})
}
