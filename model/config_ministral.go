package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/meazo-go/meazo/internal/clip"
)

// Yarn is a rope_parameters block of type "yarn" as transformers 5 reads it
// (modeling_rope_utils._compute_yarn_parameters): the inverse frequencies
// blend interpolated (÷ Factor) and original ones over a ramp of
// dimensions, and cos/sin are multiplied by AttentionFactor.
type Yarn struct {
	Factor           float64
	Original         float64 // original_max_position_embeddings
	BetaFast         float64 // 32 when absent or 0
	BetaSlow         float64 // 1 when absent or 0
	AttentionFactor  float64 // from the config, else from mscale and mscale_all_dim
	NoTruncate       bool    // truncate: false keeps the correction range's bounds unrounded
	MaxPositionEmbed int     // the config's max_position_embeddings (Factor's default)
}

// ministral3Defaults are Ministral3Config's defaults for the keys this
// loader reads (configuration_ministral3.py): rms_norm_eps 1e-5, untied
// embeddings, no sliding window.
const ministral3Eps = 1e-5

// parseMistral3 reads a Mistral3ForConditionalGeneration config.json: the
// language model's config is its text_config, which must be a ministral3
// one; the vision tower and the projector are not run (the paper fine-tunes
// the language model on text) and their weights are never read.
func parseMistral3(b []byte, r rawConfig, present map[string]json.RawMessage) (*Config, error) {
	if raw, ok := present["quantization_config"]; ok && !isNull(raw) {
		return nil, fmt.Errorf(`"quantization_config": quantized checkpoints are not supported; ` +
			`mistralai/Ministral-3-14B-Instruct-2512 is published in FP8: download mistralai/Ministral-3-14B-Instruct-2512-BF16`)
	}
	text, ok := present["text_config"]
	if !ok || isNull(text) {
		return nil, fmt.Errorf(`Mistral3ForConditionalGeneration: "text_config" is missing`)
	}
	var outer struct {
		Dtype string `json:"dtype"`
	}
	_ = json.Unmarshal(b, &outer)
	c, err := parseMinistral3(text, rawConfig{TorchDtype: r.TorchDtype}, nil, true)
	if err != nil {
		return nil, fmt.Errorf(`"text_config": %w`, err)
	}
	c.Architecture = "Mistral3ForConditionalGeneration"
	if c.TorchDtype == "" {
		c.TorchDtype = r.TorchDtype
	}
	if c.TorchDtype == "" {
		c.TorchDtype = outer.Dtype
	}
	return c, nil
}

// parseMinistral3 reads a ministral3 language model's config (a
// Ministral3ForCausalLM's config.json, or a Mistral3 checkpoint's
// text_config). The model is Llama's decoder with two changes, both in
// modeling_ministral3.py: YaRN RoPE frequencies (rope_parameters) and the
// llama-4 query scale, which multiplies each query after RoPE by
// 1 + β·ln(1 + ⌊cache position / original_max_position_embeddings⌋). The
// shared checks are Llama's (ParseConfig on a Llama view of the keys).
func parseMinistral3(b []byte, _ rawConfig, _ map[string]json.RawMessage, multimodal bool) (*Config, error) {
	keys, err := ministral3Keys(b, multimodal)
	if err != nil {
		return nil, err
	}
	p, err := parseMinistral3Rope(keys)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(ministral3AsLlama(keys, *p.Theta))
	if err != nil {
		return nil, err
	}
	c.Architecture, c.Multimodal = "Ministral3ForCausalLM", multimodal
	if raw, ok := keys["max_position_embeddings"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &c.MaxPositionEmbeddings); err != nil || c.MaxPositionEmbeddings <= 0 {
			return nil, fmt.Errorf(`"max_position_embeddings" must be a positive whole number, got %s`, raw)
		}
	} else {
		c.MaxPositionEmbeddings = 262144 // Ministral3Config's default
	}
	if p.Beta4 == nil || p.Original == nil {
		return nil, fmt.Errorf(`"rope_parameters" needs llama_4_scaling_beta and original_max_position_embeddings (modeling_ministral3 reads both)`)
	}
	if !finitePositive(*p.Original) || math.IsNaN(*p.Beta4) || math.IsInf(*p.Beta4, 0) {
		return nil, fmt.Errorf(`"rope_parameters": original_max_position_embeddings must be positive and llama_4_scaling_beta finite, got %v and %v`, *p.Original, *p.Beta4)
	}
	c.Llama4Beta, c.Llama4Original = *p.Beta4, *p.Original
	kind := p.RopeType
	if p.Type != "" { // HF moves a legacy "type" over "rope_type"
		kind = p.Type
	}
	switch kind {
	case "default", "":
	case "yarn":
		if c.Yarn, err = parseYarn(p.Factor, p.Original, p.BetaFast, p.BetaSlow, p.Mscale, p.MscaleAll, p.AttnF, p.Truncate, c.MaxPositionEmbeddings); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf(`"rope_parameters": unsupported rope_type %s for ministral3 (supported: yarn, default)`, clip.Quote(kind))
	}
	if err := checkRope(c); err != nil {
		return nil, err
	}
	return c, nil
}

// ministral3Keys reads a ministral3 config's keys, refusing another
// language model in a multimodal checkpoint and a sliding window.
func ministral3Keys(b []byte, multimodal bool) (map[string]json.RawMessage, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if mt, ok := keys["model_type"]; ok && multimodal {
		var s string
		_ = json.Unmarshal(mt, &s)
		if s != "ministral3" {
			return nil, fmt.Errorf(`model_type %s is not supported (only ministral3, Ministral-3's language model)`, clip.Quote(s))
		}
	}
	if raw, ok := keys["sliding_window"]; ok && !isNull(raw) {
		return nil, fmt.Errorf(`"sliding_window" %s is not supported for ministral3 (the published configs say null)`, clip.Raw(string(raw)))
	}
	return keys, nil
}

// yarnKeys are the keys of a yarn block (rope_scaling in transformers 4,
// rope_parameters in 5) that parseYarn reads.
type yarnKeys struct {
	Factor    *float64 `json:"factor"`
	Original  *float64 `json:"original_max_position_embeddings"`
	BetaFast  *float64 `json:"beta_fast"`
	BetaSlow  *float64 `json:"beta_slow"`
	Mscale    *float64 `json:"mscale"`
	MscaleAll *float64 `json:"mscale_all_dim"`
	AttnF     *float64 `json:"attention_factor"`
}

// ministral3Rope is a ministral3 config's rope_parameters.
type ministral3Rope struct {
	Type     string   `json:"type"`
	RopeType string   `json:"rope_type"`
	Theta    *float64 `json:"rope_theta"`
	yarnKeys
	Truncate *bool    `json:"truncate"`
	Beta4    *float64 `json:"llama_4_scaling_beta"`
	Partial  *float64 `json:"partial_rotary_factor"`
}

// parseMinistral3Rope reads rope_parameters, which must be there with its
// rope_theta and rotate whole heads.
func parseMinistral3Rope(keys map[string]json.RawMessage) (*ministral3Rope, error) {
	rope, ok := keys["rope_parameters"]
	if !ok || isNull(rope) {
		return nil, fmt.Errorf(`"rope_parameters" is missing: ministral3 reads llama_4_scaling_beta and original_max_position_embeddings from it`)
	}
	var p ministral3Rope
	if err := json.Unmarshal(rope, &p); err != nil {
		return nil, fmt.Errorf(`"rope_parameters": %w`, err)
	}
	if p.Theta == nil {
		return nil, fmt.Errorf(`"rope_parameters" has no rope_theta`)
	}
	if p.Partial != nil && *p.Partial != 1 {
		return nil, fmt.Errorf(`"rope_parameters": partial_rotary_factor %v is not supported (only 1)`, *p.Partial)
	}
	return &p, nil
}

// ministral3AsLlama is the Llama view of a ministral3 config that
// ParseConfig checks: the same sizes, θ at the top, no rope block,
// Ministral3Config's eps default.
func ministral3AsLlama(keys map[string]json.RawMessage, theta float64) []byte {
	llama := map[string]json.RawMessage{}
	for k, v := range keys {
		llama[k] = v
	}
	delete(llama, "rope_parameters")
	delete(llama, "rope_scaling")
	llama["architectures"] = json.RawMessage(`["LlamaForCausalLM"]`)
	if _, ok := llama["rms_norm_eps"]; !ok {
		llama["rms_norm_eps"] = json.RawMessage(`1e-5`)
	}
	llama["rope_theta"], _ = json.Marshal(theta)
	lb, _ := json.Marshal(llama)
	return lb
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// parseYarn fills Yarn as _compute_yarn_parameters reads its keys: factor
// defaults to max_position_embeddings / original; the attention factor, when
// not given, is get_mscale(factor, mscale)/get_mscale(factor, mscale_all_dim)
// if both are given and non-zero, else get_mscale(factor).
func parseYarn(factor, original, betaFast, betaSlow, mscale, mscaleAll, attn *float64, truncate *bool, maxPos int) (*Yarn, error) {
	y := &Yarn{Original: *original, BetaFast: 32, BetaSlow: 1, MaxPositionEmbed: maxPos}
	if factor != nil {
		y.Factor = *factor
	} else {
		y.Factor = float64(maxPos) / y.Original
	}
	if betaFast != nil && *betaFast != 0 {
		y.BetaFast = *betaFast
	}
	if betaSlow != nil && *betaSlow != 0 {
		y.BetaSlow = *betaSlow
	}
	for _, v := range []struct {
		key string
		v   float64
	}{{"factor", y.Factor}, {"beta_fast", y.BetaFast}, {"beta_slow", y.BetaSlow}} {
		if !finitePositive(v.v) {
			return nil, fmt.Errorf(`"rope_parameters": yarn %s must be positive and finite, got %v`, v.key, v.v)
		}
	}
	getMscale := func(scale, m float64) float64 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*math.Log(scale) + 1
	}
	switch {
	case attn != nil:
		y.AttentionFactor = *attn
	case mscale != nil && mscaleAll != nil && *mscale != 0 && *mscaleAll != 0:
		y.AttentionFactor = getMscale(y.Factor, *mscale) / getMscale(y.Factor, *mscaleAll)
	default:
		y.AttentionFactor = getMscale(y.Factor, 1)
	}
	if !finitePositive(y.AttentionFactor) {
		return nil, fmt.Errorf(`"rope_parameters": yarn attention factor must be positive and finite, got %v`, y.AttentionFactor)
	}
	y.NoTruncate = truncate != nil && !*truncate
	return y, nil
}

// ministral3JSON turns the keys marshalHF wrote for Llama into a
// Ministral3ForCausalLM config.json: θ, YaRN and the llama-4 scale in
// rope_parameters, as transformers 5 writes them.
func ministral3JSON(j map[string]any, c *Config) {
	j["architectures"] = []string{"Ministral3ForCausalLM"}
	j["model_type"] = "ministral3"
	j["max_position_embeddings"] = c.MaxPositionEmbeddings
	j["sliding_window"] = nil
	rp := map[string]any{"rope_type": "default", "rope_theta": pyFloat(c.RopeTheta),
		"llama_4_scaling_beta": c.Llama4Beta, "original_max_position_embeddings": c.Llama4Original}
	if y := c.Yarn; y != nil {
		rp["rope_type"], rp["factor"], rp["beta_fast"], rp["beta_slow"] = "yarn", pyFloat(y.Factor), pyFloat(y.BetaFast), pyFloat(y.BetaSlow)
		rp["original_max_position_embeddings"], rp["attention_factor"], rp["truncate"] = y.Original, pyFloat(y.AttentionFactor), !y.NoTruncate
	}
	j["rope_parameters"] = rp
	for _, k := range []string{"rope_theta", "rope_scaling", "attention_bias"} {
		delete(j, k)
	}
}
