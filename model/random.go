package model

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/safetensors"
)

// randomLoader makes up weights: norms near 1 and matrices uniform with
// standard deviation std, each tensor seeded by (seed, name) so that any
// subset of tensors is reproducible. If keep is not nil every tensor is also
// recorded there (to be written out as a checkpoint).
func randomLoader(seed uint64, std float64, keep *[]safetensors.Tensor) weightLoader {
	return func(name string, shape []int) ([]float32, error) {
		h := fnv.New64a()
		h.Write([]byte(name))
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		if strings.HasSuffix(name, "norm.weight") {
			for i := range v {
				v[i] = 1 + 0.1*(2*r.Float32()-1)
			}
		} else {
			a := float32(std * math.Sqrt(3)) // uniform on [-a, a] has std a/√3
			for i := range v {
				v[i] = a * (2*r.Float32() - 1)
			}
		}
		if keep != nil {
			*keep = append(*keep, safetensors.F32Tensor(name, shape, v))
		}
		return v, nil
	}
}

// NewRandom builds a model with random weights from a config, for
// benchmarks at full size without downloading a checkpoint.
func NewRandom(c *Config, seed uint64, std float64) (*Model, error) {
	return build(c, randomLoader(seed, std, nil))
}

// WriteRandom writes a random model in HF format (config.json and an F32
// model.safetensors without lm_head.weight when tied, as save_pretrained
// does) and returns it loaded.
func WriteRandom(dir string, c *Config, seed uint64, std float64) (*Model, error) {
	var tensors []safetensors.Tensor
	m, err := build(c, randomLoader(seed, std, &tensors))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg, err := c.MarshalHF()
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg); err != nil {
		return nil, err
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), tensors, map[string]string{"format": "pt"}); err != nil {
		return nil, err
	}
	return m, nil
}

// MarshalHF renders the config as an HF config.json.
func (c *Config) MarshalHF() ([]byte, error) {
	j := map[string]any{
		"architectures":           []string{c.Architecture},
		"vocab_size":              c.VocabSize,
		"hidden_size":             c.HiddenSize,
		"intermediate_size":       c.IntermediateSize,
		"num_hidden_layers":       c.NumLayers,
		"num_attention_heads":     c.NumHeads,
		"num_key_value_heads":     c.NumKVHeads,
		"head_dim":                c.HeadDim,
		"rms_norm_eps":            json.Number(strconv.FormatFloat(float64(c.RMSNormEps), 'g', -1, 32)),
		"rope_theta":              c.RopeTheta,
		"tie_word_embeddings":     c.TieEmbeddings,
		"hidden_act":              "silu",
		"attention_bias":          false,
		"torch_dtype":             "float32",
		"max_position_embeddings": 131072,
	}
	switch c.Architecture {
	case "LlamaForCausalLM":
		j["model_type"] = "llama"
		j["mlp_bias"] = false
	case "Qwen3ForCausalLM":
		j["model_type"] = "qwen3"
		j["max_position_embeddings"] = 40960
		j["sliding_window"] = nil
		j["use_sliding_window"] = false
	default:
		return nil, fmt.Errorf("unsupported architecture %q", c.Architecture)
	}
	if c.SlidingWindow > 0 {
		j["sliding_window"] = c.SlidingWindow
	}
	if c.BOSTokenID >= 0 {
		j["bos_token_id"] = c.BOSTokenID
	}
	switch len(c.EOSTokenIDs) {
	case 0:
	case 1:
		j["eos_token_id"] = c.EOSTokenIDs[0]
	default:
		j["eos_token_id"] = c.EOSTokenIDs
	}
	if s := c.RopeScaling; s != nil {
		j["rope_scaling"] = map[string]any{
			"rope_type": "llama3", "factor": s.Factor, "low_freq_factor": s.LowFreqFactor,
			"high_freq_factor": s.HighFreqFactor, "original_max_position_embeddings": s.OriginalMaxPositionEmbeddings,
		}
	} else {
		j["rope_scaling"] = nil
	}
	return json.MarshalIndent(j, "", "  ")
}
