package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// Config is the part of an HF config.json the forward pass depends on, for
// LlamaForCausalLM and Qwen3ForCausalLM. Everything the code reads from the
// file is collected and checked here, in one place.
type Config struct {
	Architecture     string  // "LlamaForCausalLM" or "Qwen3ForCausalLM"
	VocabSize        int     // rows of embed_tokens
	HiddenSize       int     // residual stream width
	IntermediateSize int     // MLP width
	NumLayers        int     // decoder layers
	NumHeads         int     // query heads
	NumKVHeads       int     // key/value heads (grouped-query attention)
	HeadDim          int     // explicit in Qwen3 (128 for 0.6B, != hidden/heads)
	RMSNormEps       float32 // 1e-5 Llama, 1e-6 Qwen3
	RopeTheta        float64
	RopeScaling      *RopeScaling // llama3 frequency scaling, nil for plain RoPE
	TieEmbeddings    bool         // lm_head shares embed_tokens
	QKNorm           bool         // Qwen3: RMSNorm on each q/k head before RoPE
	SlidingWindow    int          // 0 = none (Qwen3 applies it whenever the key is not null)
	BOSTokenID       int          // -1 when absent
	EOSTokenIDs      []int
	TorchDtype       string
}

// RopeScaling is HF's rope_scaling block of type "llama3".
type RopeScaling struct {
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings float64
}

// rawConfig mirrors the JSON keys we read. Pointers tell "absent" from zero.
type rawConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	VocabSize             *int            `json:"vocab_size"`
	HiddenSize            *int            `json:"hidden_size"`
	IntermediateSize      *int            `json:"intermediate_size"`
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	HiddenAct             string          `json:"hidden_act"`
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
	SlidingWindow         *int            `json:"sliding_window"`
	BOSTokenID            *int            `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	TorchDtype            string          `json:"torch_dtype"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
}

// LoadConfig reads and validates config.json.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses the bytes of a config.json.
func ParseConfig(b []byte) (*Config, error) {
	var r rawConfig
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	var present map[string]json.RawMessage // which keys the file has at all
	if err := json.Unmarshal(b, &present); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(r.Architectures) != 1 {
		return nil, fmt.Errorf(`"architectures" must name exactly one class, got %q`, r.Architectures)
	}
	c := &Config{Architecture: r.Architectures[0], BOSTokenID: -1, TorchDtype: r.TorchDtype}
	switch c.Architecture {
	case "LlamaForCausalLM":
	case "Qwen3ForCausalLM":
		c.QKNorm = true
	default:
		return nil, fmt.Errorf("unsupported architecture %q (supported: LlamaForCausalLM, Qwen3ForCausalLM)", c.Architecture)
	}
	if r.HiddenAct != "" && r.HiddenAct != "silu" {
		return nil, fmt.Errorf(`unsupported "hidden_act" %q (only silu)`, r.HiddenAct)
	}
	if r.AttentionBias || r.MLPBias {
		return nil, fmt.Errorf(`"attention_bias"/"mlp_bias" true is not supported`)
	}
	ints := []struct {
		key string
		src *int
		dst *int
	}{
		{"vocab_size", r.VocabSize, &c.VocabSize},
		{"hidden_size", r.HiddenSize, &c.HiddenSize},
		{"intermediate_size", r.IntermediateSize, &c.IntermediateSize},
		{"num_hidden_layers", r.NumHiddenLayers, &c.NumLayers},
		{"num_attention_heads", r.NumAttentionHeads, &c.NumHeads},
	}
	for _, f := range ints {
		if f.src == nil {
			return nil, fmt.Errorf("missing %q", f.key)
		}
		if *f.src <= 0 {
			return nil, fmt.Errorf("%q must be positive, got %d", f.key, *f.src)
		}
		*f.dst = *f.src
	}
	c.NumKVHeads = c.NumHeads // HF default when absent
	if r.NumKeyValueHeads != nil {
		c.NumKVHeads = *r.NumKeyValueHeads
	}
	if c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0 {
		return nil, fmt.Errorf(`"num_key_value_heads" %d must be positive and divide "num_attention_heads" %d`, c.NumKVHeads, c.NumHeads)
	}
	c.HeadDim = c.HiddenSize / c.NumHeads
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return nil, fmt.Errorf(`"head_dim" must be positive and even, got %d`, c.HeadDim)
	}
	c.RMSNormEps = 1e-6
	if r.RMSNormEps != nil {
		c.RMSNormEps = float32(*r.RMSNormEps)
	}
	c.RopeTheta = 10000
	if r.RopeTheta != nil {
		c.RopeTheta = *r.RopeTheta
	}
	if !(c.RMSNormEps > 0) || math.IsInf(float64(c.RMSNormEps), 0) {
		return nil, fmt.Errorf(`"rms_norm_eps" must be positive and finite (as a float32), got %v`, *r.RMSNormEps)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return nil, fmt.Errorf(`"rope_theta" must be positive and finite, got %v`, c.RopeTheta)
	}
	c.TieEmbeddings = c.Architecture == "Qwen3ForCausalLM" // Qwen3Config default; Llama's is false
	if r.TieWordEmbeddings != nil {
		c.TieEmbeddings = *r.TieWordEmbeddings
	}
	if c.Architecture == "Qwen3ForCausalLM" {
		// HF 4.51 applies Qwen3's window whenever config.sliding_window is not
		// None, and Qwen3Config defaults it to 4096 when the key is absent
		// (MODELS.md §3.13). The real configs say null: no window.
		c.SlidingWindow = 4096
		if _, ok := present["sliding_window"]; ok {
			c.SlidingWindow = 0
			if r.SlidingWindow != nil {
				c.SlidingWindow = *r.SlidingWindow
			}
		}
	}
	if r.BOSTokenID != nil {
		c.BOSTokenID = *r.BOSTokenID
	}
	if len(r.EOSTokenID) > 0 && string(r.EOSTokenID) != "null" {
		var one int
		if json.Unmarshal(r.EOSTokenID, &one) == nil {
			c.EOSTokenIDs = []int{one}
		} else if err := json.Unmarshal(r.EOSTokenID, &c.EOSTokenIDs); err != nil {
			return nil, fmt.Errorf(`"eos_token_id" must be an int or a list of ints: %w`, err)
		}
	}
	if err := parseRopeScaling(r.RopeScaling, c); err != nil {
		return nil, err
	}
	return c, nil
}

func parseRopeScaling(raw json.RawMessage, c *Config) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var rs struct {
		RopeType                      string   `json:"rope_type"`
		Type                          string   `json:"type"`
		Factor                        *float64 `json:"factor"`
		LowFreqFactor                 *float64 `json:"low_freq_factor"`
		HighFreqFactor                *float64 `json:"high_freq_factor"`
		OriginalMaxPositionEmbeddings *float64 `json:"original_max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return fmt.Errorf(`"rope_scaling": %w`, err)
	}
	kind := rs.RopeType
	if kind == "" {
		kind = rs.Type
	}
	if kind == "default" {
		return nil
	}
	if kind != "llama3" {
		return fmt.Errorf(`"rope_scaling": unsupported rope_type %q (supported: llama3, default)`, kind)
	}
	if rs.Factor == nil || rs.LowFreqFactor == nil || rs.HighFreqFactor == nil || rs.OriginalMaxPositionEmbeddings == nil {
		return fmt.Errorf(`"rope_scaling": llama3 needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings`)
	}
	if *rs.HighFreqFactor == *rs.LowFreqFactor {
		return fmt.Errorf(`"rope_scaling": high_freq_factor must differ from low_freq_factor`)
	}
	c.RopeScaling = &RopeScaling{
		Factor:                        *rs.Factor,
		LowFreqFactor:                 *rs.LowFreqFactor,
		HighFreqFactor:                *rs.HighFreqFactor,
		OriginalMaxPositionEmbeddings: *rs.OriginalMaxPositionEmbeddings,
	}
	return nil
}
