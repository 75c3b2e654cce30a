package model

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
)

// ViTConfig is the part of a ViTForImageClassification config.json that
// its forward pass depends on (transformers' ViTConfig).
type ViTConfig struct {
	HiddenSize       int     // the width of every token
	NumLayers        int     // encoder layers
	NumHeads         int     // attention heads (HiddenSize/NumHeads each)
	IntermediateSize int     // MLP width
	ImageSize        int     // the square images' side in pixels
	PatchSize        int     // the square patches' side
	NumChannels      int     // 3: RGB
	NumLabels        int     // classes: the classifier's outputs (id2label's size, or num_labels, or 2)
	LayerNormEps     float32 // 1e-12 in google/vit-*
	QKVBias          bool    // query, key and value have biases
	// Headless is a ViTModel checkpoint (google/vit-base-patch16-224-in21k):
	// the encoder without a classifier, its tensors named without "vit.",
	// with a pooler the classifier does not use. LoadViTWith gives it a
	// fresh classifier of the task's classes, as ViTForImageClassification's
	// from_pretrained does; NumLabels is then id2label's size if it has
	// one, else 0 until the loader sets it.
	Headless bool
	// InitializerRange is the standard deviation of a fresh classifier's
	// weights (transformers' _init_weights: a normal truncated at ±2).
	InitializerRange float64
}

// rawViTConfig mirrors the keys read; pointers tell absent from zero.
type rawViTConfig struct {
	Architectures    []string          `json:"architectures"`
	ModelType        string            `json:"model_type"`
	HiddenSize       *int              `json:"hidden_size"`
	NumLayers        *int              `json:"num_hidden_layers"`
	NumHeads         *int              `json:"num_attention_heads"`
	IntermediateSize *int              `json:"intermediate_size"`
	HiddenAct        *string           `json:"hidden_act"`
	ImageSize        json.RawMessage   `json:"image_size"` // n or [n, n]: readSide
	PatchSize        json.RawMessage   `json:"patch_size"`
	NumChannels      *int              `json:"num_channels"`
	LayerNormEps     *float64          `json:"layer_norm_eps"`
	QKVBias          *bool             `json:"qkv_bias"`
	InitializerRange *float64          `json:"initializer_range"`
	ID2Label         map[string]string `json:"id2label"`
	NumLabels        *int              `json:"num_labels"`
}

// readSide reads a square's side as ViTConfig may give it, n or [n, n]
// (its patch embedding takes a pair for height and width; this package's
// images and patches are square), into dst; absent or null leaves dst.
func readSide(key string, raw json.RawMessage, dst *int) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if json.Unmarshal(raw, dst) == nil {
		return nil
	}
	var hw []int
	if err := json.Unmarshal(raw, &hw); err != nil || len(hw) != 2 {
		return fmt.Errorf("%s is %.40s: want n or [height, width]", key, raw)
	}
	if hw[0] != hw[1] {
		return fmt.Errorf("%s is [%d, %d]: only square images and patches are supported", key, hw[0], hw[1])
	}
	*dst = hw[0]
	return nil
}

// ViTArchitectures are the HF classes LoadViT reads: an image classifier,
// or the encoder alone (Headless).
var ViTArchitectures = []string{"ViTForImageClassification", "ViTModel"}

// IsViT reports whether the config.json of the checkpoint in dir names one
// of ViTArchitectures: such a checkpoint is loaded with LoadViT, a decoder
// with Load. A config that cannot be read is not a ViT's here; the loader
// then names what is wrong with it.
func IsViT(dir string) bool { return IsViTConfig(filepath.Join(dir, "config.json")) }

// IsViTConfig is IsViT for a config.json file by any name.
func IsViTConfig(path string) bool {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return false
	}
	var r struct {
		Architectures []string `json:"architectures"`
	}
	return json.Unmarshal(b, &r) == nil && len(r.Architectures) == 1 && slices.Contains(ViTArchitectures, r.Architectures[0])
}

// LoadViTConfig reads a ViTForImageClassification config.json.
func LoadViTConfig(path string) (*ViTConfig, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := ParseViTConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseViTConfig parses a ViTForImageClassification (or ViTModel:
// Headless) config.json with ViTConfig's defaults for absent keys (ViT-B/16
// at 224: width 768, 12 layers of 12 heads, MLP 3072, 16×16 patches, 3
// channels, eps 1e-12, biased q/k/v, "gelu", initializer_range 0.02). The
// classes are id2label's entries, which must be 0…n−1, or without it
// num_labels, or 2, as transformers counts them (a classifier must have
// some). image_size and patch_size may be n or [n, n]. Another
// architecture or activation, or a size that does not fit (heads not
// dividing the width, patches not tiling the image), is an error.
func ParseViTConfig(b []byte) (*ViTConfig, error) {
	var r rawViTConfig
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(r.Architectures) != 1 || !slices.Contains(ViTArchitectures, r.Architectures[0]) {
		return nil, fmt.Errorf(`"architectures" is %s, not ["ViTForImageClassification"] or ["ViTModel"]`, clip.List(r.Architectures))
	}
	if r.HiddenAct != nil && *r.HiddenAct != "gelu" {
		return nil, fmt.Errorf(`hidden_act %s is not implemented ("gelu", the exact GELU, is)`, clip.Quote(*r.HiddenAct))
	}
	c := &ViTConfig{HiddenSize: 768, NumLayers: 12, NumHeads: 12, IntermediateSize: 3072, ImageSize: 224,
		PatchSize: 16, NumChannels: 3, LayerNormEps: 1e-12, QKVBias: true, InitializerRange: 0.02,
		Headless: r.Architectures[0] == "ViTModel"}
	for _, f := range []struct {
		dst *int
		src *int
	}{{&c.HiddenSize, r.HiddenSize}, {&c.NumLayers, r.NumLayers}, {&c.NumHeads, r.NumHeads},
		{&c.IntermediateSize, r.IntermediateSize}, {&c.NumChannels, r.NumChannels}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if err := readSide("image_size", r.ImageSize, &c.ImageSize); err != nil {
		return nil, err
	}
	if err := readSide("patch_size", r.PatchSize, &c.PatchSize); err != nil {
		return nil, err
	}
	if r.LayerNormEps != nil {
		c.LayerNormEps = float32(*r.LayerNormEps)
	}
	if r.QKVBias != nil {
		c.QKVBias = *r.QKVBias
	}
	if r.InitializerRange != nil {
		c.InitializerRange = *r.InitializerRange
	}
	// PretrainedConfig's rule: id2label's entries; without it num_labels,
	// else 2 (save_pretrained leaves a classifier's default id2label of two
	// classes out). A ViTModel without id2label takes the task's (LoadViTWith).
	switch {
	case r.ID2Label != nil:
		c.NumLabels = len(r.ID2Label)
	case r.NumLabels != nil:
		c.NumLabels = *r.NumLabels
	case !c.Headless:
		c.NumLabels = 2
	}
	for i := 0; r.ID2Label != nil && i < c.NumLabels; i++ {
		if _, ok := r.ID2Label[fmt.Sprint(i)]; !ok {
			return nil, fmt.Errorf("id2label has %d entries but no %q: the classes must be numbered 0…%d", c.NumLabels, fmt.Sprint(i), c.NumLabels-1)
		}
	}
	return c, c.validate()
}

// maxViTSide bounds every size a config may ask for, so that a wrong file
// is an error and not an allocation of gigabytes.
const maxViTSide = 1 << 16

func (c *ViTConfig) validate() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumLayers}, {"num_attention_heads", c.NumHeads},
		{"intermediate_size", c.IntermediateSize}, {"image_size", c.ImageSize}, {"patch_size", c.PatchSize},
		{"num_channels", c.NumChannels}, {"id2label's classes", c.NumLabels}} {
		if v.n == 0 && c.Headless && v.name == "id2label's classes" {
			continue // the loader gives a ViTModel the task's classes
		}
		if v.n <= 0 || v.n > maxViTSide {
			return fmt.Errorf("%s is %d, not between 1 and %d", v.name, v.n, maxViTSide)
		}
	}
	switch {
	case c.HiddenSize%c.NumHeads != 0:
		return fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumHeads)
	case c.ImageSize%c.PatchSize != 0:
		return fmt.Errorf("image_size %d is not a multiple of patch_size %d", c.ImageSize, c.PatchSize)
	case c.Tokens() > 4096:
		return fmt.Errorf("%d patches of %d in a %d image are more tokens than the 4096 this encoder takes", c.Tokens()-1, c.PatchSize, c.ImageSize)
	case !(c.LayerNormEps > 0) || math.IsInf(float64(c.LayerNormEps), 0):
		return fmt.Errorf("layer_norm_eps %v is not a positive number", c.LayerNormEps)
	case !(c.InitializerRange > 0) || c.InitializerRange > 1:
		return fmt.Errorf("initializer_range %v is not a standard deviation in (0, 1]", c.InitializerRange)
	}
	return nil
}

// Patches is the number of patches of an image: (ImageSize/PatchSize)².
func (c *ViTConfig) Patches() int { g := c.ImageSize / c.PatchSize; return g * g }

// Tokens is the encoder's sequence length: the CLS token and the patches.
func (c *ViTConfig) Tokens() int { return c.Patches() + 1 }

// HeadDim is the width of one attention head.
func (c *ViTConfig) HeadDim() int { return c.HiddenSize / c.NumHeads }

// PixelsPerImage is the length of one image's pixel_values [C][H][W].
func (c *ViTConfig) PixelsPerImage() int { return c.NumChannels * c.ImageSize * c.ImageSize }

// ParamCount is the number of parameters of a ViTForImageClassification of
// this config (the patch projection, CLS token, positions, the layers, the
// final LayerNorm and the classifier): 85,827,109 for ViT-B/16 with 37
// classes, the paper's count.
func (c *ViTConfig) ParamCount() int {
	d, f, p := c.HiddenSize, c.IntermediateSize, c.PatchSize
	qkv := 3 * d * d
	if c.QKVBias {
		qkv += 3 * d
	}
	layer := qkv + d*d + d + // query, key, value, attention.output.dense
		2*2*d + // layernorm_before, layernorm_after
		d*f + f + f*d + d // intermediate.dense, output.dense
	return d*c.NumChannels*p*p + d + d + c.Tokens()*d + c.NumLayers*layer + 2*d + c.NumLabels*d + c.NumLabels
}
