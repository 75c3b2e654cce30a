package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const vitTinyDir = "testdata/vit/vit-tiny"

// TestParseViTConfig: the published forms, ViTConfig's defaults, and what
// is refused.
func TestParseViTConfig(t *testing.T) {
	arch := `"architectures": ["ViTForImageClassification"], "id2label": {"0": "a", "1": "b"}`
	for _, tc := range []struct {
		name, json, err string
		check           func(*ViTConfig) bool
	}{
		{name: "defaults are ViT-B/16", json: `{` + arch + `}`, check: func(c *ViTConfig) bool {
			return c.HiddenSize == 768 && c.NumLayers == 12 && c.Tokens() == 197 && c.NumLabels == 2 && c.LayerNormEps == 1e-12 && c.QKVBias
		}},
		{name: "vit-base model", json: `{"architectures": ["ViTModel"]}`, err: "no classifier"},
		{name: "relu", json: `{` + arch + `, "hidden_act": "relu"}`, err: "hidden_act"},
		{name: "heads", json: `{` + arch + `, "hidden_size": 100, "num_attention_heads": 12}`, err: "not a multiple of num_attention_heads"},
		{name: "patches", json: `{` + arch + `, "image_size": 100}`, err: "not a multiple of patch_size"},
		{name: "huge", json: `{` + arch + `, "image_size": 4096, "patch_size": 4}`, err: "more tokens"},
		{name: "zero layers", json: `{` + arch + `, "num_hidden_layers": 0}`, err: "num_hidden_layers is 0"},
		{name: "labels with a gap", json: `{"architectures": ["ViTForImageClassification"], "id2label": {"0": "a", "2": "b"}}`, err: `no "1"`},
		{name: "no labels", json: `{"architectures": ["ViTForImageClassification"]}`, err: "id2label's classes is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseViTConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("%+v, %v", c, err)
			}
		})
	}
}

// TestViTRefusesBadInput: pixel values of the wrong length, labels out of
// range, a checkpoint with a tensor missing or one too many.
func TestViTRefusesBadInput(t *testing.T) {
	m, err := LoadViT(vitTinyDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	px := make([]float32, 2*m.Config.PixelsPerImage())
	if _, err := m.Logits(px[:len(px)-1], 2); err == nil || !strings.Contains(err.Error(), "pixel values") {
		t.Errorf("short pixels: %v", err)
	}
	if _, err := m.Logits(nil, 0); err == nil {
		t.Error("no images: no error")
	}
	if _, _, err := m.Loss(px, 2, []int{0, 37}); err == nil || !strings.Contains(err.Error(), "label 37") {
		t.Errorf("label 37 of 37 classes: %v", err)
	}

	// Another model's config over these weights: a layer's tensors unused.
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(vitTinyDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "config.json" {
			b = []byte(strings.Replace(string(b), `"num_hidden_layers": 3`, `"num_hidden_layers": 2`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadViT(dir, nil); err == nil || !strings.Contains(err.Error(), "vit.encoder.layer.2") {
		t.Errorf("2 of 3 layers: %v", err)
	}
	cfg, _ := os.ReadFile(filepath.Join(vitTinyDir, "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"num_hidden_layers": 3`, `"num_hidden_layers": 4`, 1)), 0o644)
	if _, err := LoadViT(dir, nil); err == nil || !strings.Contains(err.Error(), `missing tensor "vit.encoder.layer.3.layernorm_before.weight"`) {
		t.Errorf("4 of 3 layers: %v", err)
	}
}
