package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
)

// Architectures are the HF model classes the package runs.
var Architectures = []string{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "OPTForCausalLM", "Ministral3ForCausalLM", "Mistral3ForConditionalGeneration"}

// Config is the part of an HF config.json the forward pass depends on, for
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
// Qwen3ForCausalLM. Everything the
// code reads from the file is collected and checked here, in one place.
type Config struct {
	Architecture     string  // "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM" or "Qwen3ForCausalLM"
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
	RopeLinear       float64      // linear scaling's factor (the inverse frequencies ÷ it), 0 for none
	TieEmbeddings    bool         // lm_head shares embed_tokens
	QKNorm           bool         // Qwen3: RMSNorm on each q/k head before RoPE
	QKVBias          bool         // biases on q_proj, k_proj, v_proj: Qwen2 always, Llama's and Qwen3's attention_bias
	OBias            bool         // a bias on o_proj: Llama's and Qwen3's attention_bias (never Qwen2's)
	MLPBias          bool         // biases on gate_proj, up_proj, down_proj: Llama's mlp_bias
	SlidingWindow    int          // 0 = none (Qwen2 and Qwen3 apply it whenever the key is not null)
	BOSTokenID       int          // -1 when absent
	EOSTokenIDs      []int
	GenerationEOS    []int // generation_config.json's eos_token_id, which HF's generate stops at (LoadWith reads it)
	// HasGenerationConfig: the checkpoint has a generation_config.json, whose
	// eos ids replace config.json's in generation (StopIDs).
	HasGenerationConfig bool
	TorchDtype          string

	// Ministral-3 (model_type ministral3) only; zero for the others (config_ministral.go).
	Yarn                  *Yarn   // YaRN frequencies and cos/sin scale, nil for plain RoPE or llama3
	Llama4Beta            float64 // llama_4_scaling_beta: queries × 1+β·ln(1+⌊slot/Llama4Original⌋); 0 = none
	Llama4Original        float64 // original_max_position_embeddings of that scale
	MaxPositionEmbeddings int     // max_position_embeddings (YaRN's factor when the config gives none)
	Multimodal            bool    // Mistral3ForConditionalGeneration: the language model's weights under model.language_model.*

	// OPT (OPTForCausalLM) only; zero for the others (config_opt.go).
	MaxPositions int     // max_position_embeddings: learned positions 0…MaxPositions−1, at rows 2… of the table (OPT's offset)
	WordEmbedDim int     // word_embed_proj_dim: the embeddings' and the LM head's width, projected to and from HiddenSize where it differs
	PostNorm     bool    // do_layer_norm_before false (OPT-350m): LayerNorm after each residual add rather than before each block
	NoFinalNorm  bool    // no final norm after the last layer (OPT when PostNorm or _remove_final_layer_norm)
	LayerNormEps float32 // torch's nn.LayerNorm default, 1e-5 (OPT's configs do not set it)
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
	RopeParameters        json.RawMessage `json:"rope_parameters"` // transformers >= 5: rope_theta and rope_scaling's keys together
	PartialRotaryFactor   *float64        `json:"partial_rotary_factor"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	HiddenAct             string          `json:"hidden_act"`
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
	SlidingWindow         *int            `json:"sliding_window"`
	UseSlidingWindow      bool            `json:"use_sliding_window"`
	MaxWindowLayers       *int            `json:"max_window_layers"`
	BOSTokenID            *int            `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	TorchDtype            string          `json:"torch_dtype"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
}

// LoadConfig reads and validates config.json.
func LoadConfig(path string) (*Config, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// maxHeadDim bounds head_dim (real models: 64 to 256).
const maxHeadDim = 1 << 12

// ParseConfig parses the bytes of a config.json. Its checks run in a fixed
// order (the architecture, the sizes, the norm and RoPE, the tokens, then
// RoPE's scaling; OPT's in parseOPT's order), so a file with several faults
// is told the first of them.
func ParseConfig(b []byte) (*Config, error) {
	var r rawConfig
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	var present map[string]json.RawMessage // which keys the file has at all
	if err := json.Unmarshal(b, &present); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	c, whole, err := parseArchitecture(b, r, present)
	if err != nil {
		return nil, err
	}
	if whole { // OPT's and Ministral-3's parsers have read and checked all of it
		return c, nil
	}
	if err := c.parseSizes(r); err != nil {
		return nil, err
	}
	rs, err := c.parseNormAndRope(r, present)
	if err != nil {
		return nil, err
	}
	if err := c.parseTokens(r, present); err != nil {
		return nil, err
	}
	if err := parseRopeScaling(rs.scaling, c, r.MaxPositionEmbeddings); err != nil {
		return nil, err
	}
	if err := checkRope(c); err != nil {
		return nil, err
	}
	return c, nil
}

// parseArchitecture starts a Config from the file's one architecture class,
// with the projections' biases its HF class has (projectionBiases), and
// refuses what this forward does not compute: another activation,
// quantized weights. An OPT config is read whole here, by parseOPT
// (config_opt.go), its own checks in its own order, and so is a Ministral-3
// one (config_ministral.go): whole says so.
func parseArchitecture(b []byte, r rawConfig, present map[string]json.RawMessage) (c *Config, whole bool, err error) {
	arch, err := architectureOf(r)
	if err != nil {
		return nil, false, err
	}
	c = &Config{Architecture: arch, BOSTokenID: -1, TorchDtype: r.TorchDtype}
	switch c.Architecture {
	case "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM":
	case "Qwen3ForCausalLM":
		c.QKNorm = true
	case "OPTForCausalLM":
		c, err = parseOPT(b, r, present)
		return c, true, err
	case "Mistral3ForConditionalGeneration":
		c, err = parseMistral3(b, r, present)
		return c, true, err
	case "Ministral3ForCausalLM":
		c, err = parseMinistral3(b, r, present, false)
		return c, true, err
	default:
		if slices.Contains(ViTArchitectures, c.Architecture) {
			return nil, false, fmt.Errorf("architecture %s is an image classifier, not a language model: it runs image tasks (task.name pets, meazo-eval task --task pets, meazo-inspect forward), not this", clip.Quote(c.Architecture))
		}
		return nil, false, fmt.Errorf("unsupported architecture %s (supported: %s, and %s for image tasks; a base class, LlamaModel or Qwen3Model, by its model_type)", clip.Quote(c.Architecture), strings.Join(Architectures, ", "), strings.Join(ViTArchitectures, ", "))
	}
	if r.HiddenAct != "" && r.HiddenAct != "silu" && r.HiddenAct != "swish" { // transformers' ACT2CLS: swish is nn.SiLU too
		return nil, false, fmt.Errorf(`unsupported "hidden_act" %s (only silu, or its other name swish)`, clip.Quote(r.HiddenAct))
	}
	c.projectionBiases(r)
	if raw, ok := present["quantization_config"]; ok && !isNull(raw) {
		return nil, false, fmt.Errorf(`"quantization_config": quantized checkpoints are not supported (float32, bfloat16 or float16 weights only)`)
	}
	return c, false, nil
}

// causalLMs are, for each model_type this package runs as a causal LM, the
// class AutoModelForCausalLM builds and the family's base class.
var causalLMs = map[string]struct{ causal, base string }{
	"llama":      {"LlamaForCausalLM", "LlamaModel"},
	"mistral":    {"MistralForCausalLM", "MistralModel"},
	"qwen2":      {"Qwen2ForCausalLM", "Qwen2Model"},
	"qwen3":      {"Qwen3ForCausalLM", "Qwen3Model"},
	"opt":        {"OPTForCausalLM", "OPTModel"},
	"ministral3": {"Ministral3ForCausalLM", "Ministral3Model"},
}

// architectureOf is the class a config.json describes: its one
// "architectures" class, or, where it names none or the family's base class
// (a model saved from LlamaModel, Qwen3Model, …), the causal LM of its
// "model_type", the class transformers' AutoModelForCausalLM builds for it
// (from_pretrained picks the class by model_type alone, and adds back the
// "model." prefix a base class's weights lack: load.go's checkpointName).
func architectureOf(r rawConfig) (string, error) {
	lm, known := causalLMs[r.ModelType]
	switch {
	case len(r.Architectures) == 0 && known:
		return lm.causal, nil
	case len(r.Architectures) == 0:
		types := slices.Sorted(maps.Keys(causalLMs))
		return "", fmt.Errorf(`"architectures" is absent and "model_type" %s is none of %s, so the model's class is unknown`, clip.Quote(r.ModelType), strings.Join(types, ", "))
	case len(r.Architectures) != 1:
		return "", fmt.Errorf(`"architectures" must name exactly one class, got %s`, clip.List(r.Architectures))
	case known && r.Architectures[0] == lm.base:
		return lm.causal, nil
	}
	return r.Architectures[0], nil
}

// projectionBiases sets which projections have a bias, as the HF classes
// build them (transformers 4.51): Qwen2Attention always has q_proj, k_proj
// and v_proj biases and none on o_proj, whatever the config says (Qwen2Config
// has neither key); Llama's and Qwen3's attention_bias puts one on all four;
// Llama's mlp_bias one on gate_proj, up_proj and down_proj, and Qwen3MLP has
// none whatever mlp_bias says (Qwen3Config has no such key).
func (c *Config) projectionBiases(r rawConfig) {
	switch c.Architecture {
	case "Qwen2ForCausalLM":
		c.QKVBias = true
	case "LlamaForCausalLM":
		c.QKVBias, c.OBias, c.MLPBias = r.AttentionBias, r.AttentionBias, r.MLPBias
	case "Qwen3ForCausalLM":
		c.QKVBias, c.OBias = r.AttentionBias, r.AttentionBias
	}
}

// parseSizes reads the widths, the layers and the heads.
func (c *Config) parseSizes(r rawConfig) error {
	if err := readSizes([]sizeField{
		{"vocab_size", r.VocabSize, &c.VocabSize, 1 << 24},
		{"hidden_size", r.HiddenSize, &c.HiddenSize, 1 << 17},
		{"intermediate_size", r.IntermediateSize, &c.IntermediateSize, 1 << 20},
		{"num_hidden_layers", r.NumHiddenLayers, &c.NumLayers, 1 << 12},
		{"num_attention_heads", r.NumAttentionHeads, &c.NumHeads, 1 << 12},
	}); err != nil {
		return err
	}
	c.NumKVHeads = c.NumHeads // HF default when absent
	if c.Architecture == "MistralForCausalLM" {
		c.NumKVHeads = 8 // MistralConfig's
	}
	if r.NumKeyValueHeads != nil {
		c.NumKVHeads = *r.NumKeyValueHeads
	}
	if c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0 {
		return fmt.Errorf(`"num_key_value_heads" %d must be positive and divide "num_attention_heads" %d`, c.NumKVHeads, c.NumHeads)
	}
	c.HeadDim = c.HiddenSize / c.NumHeads
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim > maxHeadDim {
		return fmt.Errorf(`"head_dim" must be even and in 2..%d, got %d`, maxHeadDim, c.HeadDim)
	}
	return nil
}

// parseNormAndRope reads the RMSNorm's ε and RoPE's θ, and returns where
// the file keeps RoPE's settings, whose scaling parseRopeScaling reads.
func (c *Config) parseNormAndRope(r rawConfig, present map[string]json.RawMessage) (ropeSource, error) {
	c.RMSNormEps = 1e-6
	if r.RMSNormEps != nil {
		c.RMSNormEps = float32(*r.RMSNormEps)
	}
	// transformers 5 writes rope_theta and rope_scaling's keys together as
	// rope_parameters, and no top-level rope_theta: read either, never
	// fall back to the default θ when the file says where θ is.
	rs, err := ropeBlock(r, present)
	if err != nil {
		return rs, err
	}
	c.RopeTheta = 10000
	if rs.theta != nil {
		c.RopeTheta = *rs.theta
	}
	if !(c.RMSNormEps > 0) || math.IsInf(float64(c.RMSNormEps), 0) {
		return rs, fmt.Errorf(`"rms_norm_eps" must be positive and finite (as a float32), got %v`, *r.RMSNormEps)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return rs, fmt.Errorf(`"rope_theta" must be positive and finite, got %v`, c.RopeTheta)
	}
	return rs, nil
}

// parseTokens reads the tied embeddings, Qwen2's and Qwen3's sliding
// window and the special token ids.
func (c *Config) parseTokens(r rawConfig, present map[string]json.RawMessage) error {
	c.TieEmbeddings = false // LlamaConfig's, Qwen2Config's and Qwen3Config's default
	if r.TieWordEmbeddings != nil {
		c.TieEmbeddings = *r.TieWordEmbeddings
	}
	if err := c.parseSlidingWindow(r, present); err != nil {
		return err
	}
	return specialTokens(r, c)
}

// parseSlidingWindow reads Mistral's, Qwen2's and Qwen3's sliding window as
// transformers 4.51 computes it with eager (and sdpa) attention: the causal
// mask hides the keys at sliding_window slots or more before the query, in
// every layer, whenever config.sliding_window is not None, and MistralConfig,
// Qwen2Config and Qwen3Config default it to 4096 when the key is absent (their
// _prepare_4d_causal_attention_mask_with_cache_position; Mistral-7B-v0.1's
// config says 4096, v0.2's and v0.3's null). Qwen's use_sliding_window
// and max_window_layers do not enter that mask: they choose the layers that
// flash_attention_2 windows (those from max_window_layers on), and later
// transformers read them into the mask too. So the two readings agree
// exactly when use_sliding_window is false and no sequence is longer than
// the window: a config with use_sliding_window true (and a window) is
// refused by name. Qwen2.5-0.5B- and 1.5B-Instruct's configs say
// use_sliding_window false with a window of 32768, their
// max_position_embeddings, and Qwen3's null. MistralConfig has no
// use_sliding_window: its window is the mask's alone.
func (c *Config) parseSlidingWindow(r rawConfig, present map[string]json.RawMessage) error {
	switch c.Architecture {
	case "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM":
	default:
		return nil
	}
	c.SlidingWindow = 4096
	if _, ok := present["sliding_window"]; ok {
		c.SlidingWindow = 0
		if r.SlidingWindow != nil {
			c.SlidingWindow = *r.SlidingWindow
			if c.SlidingWindow <= 0 {
				return fmt.Errorf(`"sliding_window" must be positive or null, got %d`, c.SlidingWindow)
			}
		}
	}
	if r.UseSlidingWindow && c.SlidingWindow > 0 && c.Architecture != "MistralForCausalLM" {
		layers := "max_window_layers absent: 28"
		if r.MaxWindowLayers != nil {
			layers = fmt.Sprintf("max_window_layers %d", *r.MaxWindowLayers)
		}
		return fmt.Errorf(`"use_sliding_window" true is not supported: transformers windows the layers from "max_window_layers" on (%s) with flash attention and every layer with eager attention; meazo-go applies "sliding_window" %d to every layer only with use_sliding_window false`,
			layers, c.SlidingWindow)
	}
	return nil
}

// sizeField is a size config.json must give, within 1..max.
type sizeField struct {
	key string
	src *int
	dst *int
	max int
}

// readSizes checks and copies the sizes. The bounds are far above any
// model this loads (Llama-3.1-405B: hidden 16,384, intermediate 53,248,
// 126 layers) and keep a few bytes of config.json from asking gigabytes
// before any weight is read.
func readSizes(fields []sizeField) error {
	for _, f := range fields {
		if f.src == nil {
			return fmt.Errorf("missing %q", f.key)
		}
		if *f.src <= 0 || *f.src > f.max {
			return fmt.Errorf("%q must be in 1..%d, got %d", f.key, f.max, *f.src)
		}
		*f.dst = *f.src
	}
	return nil
}

// specialTokens reads bos_token_id and eos_token_id (an int or a list).
func specialTokens(r rawConfig, c *Config) error {
	if r.BOSTokenID != nil {
		c.BOSTokenID = *r.BOSTokenID
	}
	ids, err := eosIDs(r.EOSTokenID, c.VocabSize)
	if ids != nil { // absent or null: the architecture's default stays (OPT's </s>)
		c.EOSTokenIDs = ids
	}
	return err
}

// checkRope refuses RoPE settings that are each in range but make the
// rotation angles meaningless: a θ so small that 1/θ^(2i/d) overflows
// float32, or llama3 scaling that divides by zero or flips a frequency's
// sign. Every angle pos·f, for the positions a batch may hold (< 2^24),
// must be finite.
func checkRope(c *Config) error {
	for i, f := range ropeInvFreq(c) {
		if !(f > 0) || float64(f)*(1<<24) > math.MaxFloat32 {
			what := `"rope_theta"`
			if c.RopeScaling != nil {
				what = `"rope_theta" with "rope_scaling"`
			}
			return fmt.Errorf("%s make RoPE's inverse frequency %d %v (θ %v): the rotation angles would not be finite", what, i, f, c.RopeTheta)
		}
	}
	return nil
}

// ropeSource is where a config says RoPE's θ and scaling are.
type ropeSource struct {
	theta   *float64
	scaling json.RawMessage // rope_scaling's keys (rope_type, factor, …), or nothing
}

// ropeBlock finds θ and the scaling keys: top-level rope_theta and
// rope_scaling (transformers 4), or rope_parameters (transformers 5), not
// both in disagreement; and refuses what would change RoPE without this
// loader applying it (a partial rotary factor, per-layer-type blocks, a null
// θ).
func ropeBlock(r rawConfig, present map[string]json.RawMessage) (ropeSource, error) {
	out := ropeSource{theta: r.RopeTheta, scaling: r.RopeScaling}
	if raw, ok := present["rope_theta"]; ok && string(raw) == "null" && isNull(r.RopeParameters) {
		return out, fmt.Errorf(`"rope_theta" is null and there are no "rope_parameters" to read it from`)
	}
	if r.PartialRotaryFactor != nil && *r.PartialRotaryFactor != 1 {
		return out, fmt.Errorf(`"partial_rotary_factor" %v is not supported (only 1: RoPE over the whole head)`, *r.PartialRotaryFactor)
	}
	if isNull(r.RopeParameters) {
		return out, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.RopeParameters, &keys); err != nil {
		return out, fmt.Errorf(`"rope_parameters": want an object: %w`, err)
	}
	for k, v := range keys {
		if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '{' {
			return out, fmt.Errorf(`"rope_parameters": a block per layer type (%s) is not supported`, clip.Quote(k))
		}
	}
	var p struct {
		Theta               *float64 `json:"rope_theta"`
		PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
	}
	if err := json.Unmarshal(r.RopeParameters, &p); err != nil {
		return out, fmt.Errorf(`"rope_parameters": %w`, err)
	}
	if p.PartialRotaryFactor != nil && *p.PartialRotaryFactor != 1 {
		return out, fmt.Errorf(`"rope_parameters": partial_rotary_factor %v is not supported (only 1: RoPE over the whole head)`, *p.PartialRotaryFactor)
	}
	if p.Theta == nil {
		return out, fmt.Errorf(`"rope_parameters" has no rope_theta`)
	}
	if out.theta != nil && *out.theta != *p.Theta {
		return out, fmt.Errorf(`"rope_theta" %v and "rope_parameters".rope_theta %v disagree`, *out.theta, *p.Theta)
	}
	if !isNull(out.scaling) && !bytes.Equal(bytes.TrimSpace(out.scaling), bytes.TrimSpace(r.RopeParameters)) {
		return out, fmt.Errorf(`both "rope_scaling" and "rope_parameters" are given: give one`)
	}
	out.theta, out.scaling = p.Theta, r.RopeParameters
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// ropeScalingBlock is rope_scaling's keys, of every type read.
type ropeScalingBlock struct {
	RopeType       string   `json:"rope_type"`
	Type           string   `json:"type"`
	LowFreqFactor  *float64 `json:"low_freq_factor"`
	HighFreqFactor *float64 `json:"high_freq_factor"`
	yarnKeys                // factor and original_max_position_embeddings are llama3's too
}

// parseRopeScaling reads a Llama-like config's rope_scaling as
// transformers 4.51's ROPE_INIT_FUNCTIONS do: llama3 (Llama 3.1's
// frequency bands), linear (every inverse frequency ÷ factor) and yarn
// (config_ministral.go's Yarn, read by 4.51's rule: an
// original_max_position_embeddings in the block makes the factor
// max_position_embeddings ÷ it, which the file must then give). dynamic
// (NTK scaling that changes with the longest sequence seen) is refused.
func parseRopeScaling(raw json.RawMessage, c *Config, maxPos *int) error {
	if isNull(raw) {
		return nil
	}
	var rs ropeScalingBlock
	if err := json.Unmarshal(raw, &rs); err != nil {
		return fmt.Errorf(`"rope_scaling": %w`, err)
	}
	kind := rs.RopeType
	if rs.Type != "" { // HF moves a legacy "type" over "rope_type"
		kind = rs.Type
	}
	switch {
	case kind == "default" || kind == "" && rs.Factor == nil:
		return nil // rope_parameters of plain RoPE may name no type
	case kind == "llama3":
		return c.parseLlama3(rs)
	case kind == "linear":
		if rs.Factor == nil || !positiveFloat32(*rs.Factor) {
			return fmt.Errorf(`"rope_scaling": linear needs a factor, positive and finite (as a float32), got %s`, orNone(rs.Factor))
		}
		c.RopeLinear = *rs.Factor
		return nil
	case kind == "yarn":
		return c.parseYarnScaling(rs, maxPos)
	}
	return fmt.Errorf(`"rope_scaling": unsupported rope_type %s (supported: llama3, linear, yarn, default)`, clip.Quote(kind))
}

// parseLlama3 reads a llama3 block: all four keys, each a positive finite
// float32, the two frequency factors apart.
func (c *Config) parseLlama3(rs ropeScalingBlock) error {
	if rs.Factor == nil || rs.LowFreqFactor == nil || rs.HighFreqFactor == nil || rs.Original == nil {
		return fmt.Errorf(`"rope_scaling": llama3 needs factor, low_freq_factor, high_freq_factor and original_max_position_embeddings`)
	}
	if *rs.HighFreqFactor == *rs.LowFreqFactor {
		return fmt.Errorf(`"rope_scaling": high_freq_factor must differ from low_freq_factor`)
	}
	for _, v := range []struct {
		key string
		v   float64
	}{{"factor", *rs.Factor}, {"low_freq_factor", *rs.LowFreqFactor}, {"high_freq_factor", *rs.HighFreqFactor},
		{"original_max_position_embeddings", *rs.Original}} {
		if !positiveFloat32(v.v) {
			return fmt.Errorf(`"rope_scaling": %s must be positive and finite (as a float32), got %v`, v.key, v.v)
		}
	}
	c.RopeScaling = &RopeScaling{
		Factor:                        *rs.Factor,
		LowFreqFactor:                 *rs.LowFreqFactor,
		HighFreqFactor:                *rs.HighFreqFactor,
		OriginalMaxPositionEmbeddings: *rs.Original,
	}
	return nil
}

// parseYarnScaling reads a yarn block by transformers 4.51's rule (see
// parseRopeScaling) into c.Yarn.
func (c *Config) parseYarnScaling(rs ropeScalingBlock, maxPos *int) error {
	if rs.Factor == nil {
		return fmt.Errorf(`"rope_scaling": yarn needs a factor`)
	}
	if maxPos == nil || *maxPos <= 0 {
		return fmt.Errorf(`"rope_scaling": yarn needs "max_position_embeddings" in the config (positive)`)
	}
	factor, original := *rs.Factor, float64(*maxPos)
	if o := rs.Original; o != nil {
		if !finitePositive(*o) {
			return fmt.Errorf(`"rope_scaling": yarn original_max_position_embeddings must be positive and finite, got %v`, *o)
		}
		factor, original = float64(*maxPos) / *o, *o
	}
	var err error
	c.Yarn, err = parseYarn(&factor, &original, rs.BetaFast, rs.BetaSlow, rs.Mscale, rs.MscaleAll, rs.AttnF, nil, *maxPos)
	return err
}

// positiveFloat32 says whether v is positive and finite, and stays so as a
// float32 (RoPE's arithmetic is float32).
func positiveFloat32(v float64) bool {
	f := float64(float32(v))
	return finitePositive(v) && f != 0 && !math.IsInf(f, 0)
}

// orNone prints a number a config may leave out.
func orNone(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}
