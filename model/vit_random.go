package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/safetensors"
)

// WriteRandomViT writes a ViTForImageClassification of config c with
// NewRandomViT's weights into dir (config.json and model.safetensors, the
// tensors named as transformers names them), and returns the model on the
// CPU: a checkpoint of the real shapes to measure a run on before
// downloading one. A ViTModel config (Headless) is refused: give it the
// classes (id2label) of a classifier.
func WriteRandomViT(dir string, c *ViTConfig, seed uint64, std float64) (*ViT, error) {
	if c.Headless || c.NumLabels == 0 {
		return nil, fmt.Errorf("random vit: the config has no classifier (a ViTModel, or no id2label): a random ViTForImageClassification needs its classes")
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("random vit: %w", err)
	}
	load := randomLoader(seed, std, true)
	var tensors []safetensors.Tensor
	m, err := buildViT(c, LoadOptions{}.backend(), func(name string, shape []int) ([]float32, error) {
		v, err := load(name, shape)
		if err == nil {
			tensors = append(tensors, safetensors.F32Tensor(name, shape, v))
		}
		return v, err
	})
	if err != nil {
		return nil, err
	}
	cfg, err := c.MarshalHF()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg)
	}
	if err == nil {
		err = safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), tensors, map[string]string{"format": "pt"})
	}
	if err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// MarshalHF renders the config as a ViTForImageClassification config.json
// (float32 weights, classes named LABEL_0…, as transformers names them
// when none are given).
func (c *ViTConfig) MarshalHF() ([]byte, error) {
	id2label := map[string]string{}
	label2id := map[string]int{}
	for i := range c.NumLabels {
		name := "LABEL_" + strconv.Itoa(i)
		id2label[strconv.Itoa(i)], label2id[name] = name, i
	}
	b, err := json.MarshalIndent(map[string]any{
		"architectures":                []string{"ViTForImageClassification"},
		"model_type":                   "vit",
		"hidden_size":                  c.HiddenSize,
		"num_hidden_layers":            c.NumLayers,
		"num_attention_heads":          c.NumHeads,
		"intermediate_size":            c.IntermediateSize,
		"hidden_act":                   "gelu",
		"image_size":                   c.ImageSize,
		"patch_size":                   c.PatchSize,
		"num_channels":                 c.NumChannels,
		"layer_norm_eps":               json.Number(strconv.FormatFloat(float64(c.LayerNormEps), 'g', -1, 32)),
		"qkv_bias":                     c.QKVBias,
		"initializer_range":            pyFloat(c.InitializerRange),
		"id2label":                     id2label,
		"label2id":                     label2id,
		"torch_dtype":                  "float32",
		"hidden_dropout_prob":          pyFloat(0),
		"attention_probs_dropout_prob": pyFloat(0),
	}, "", "  ")
	return append(b, '\n'), err
}
