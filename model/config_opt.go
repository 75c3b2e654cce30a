package model

import (
	"encoding/json"
	"fmt"

	"github.com/meazo-go/meazo/internal/clip"
)

// rawOPT mirrors the keys of an OPTConfig that the Llama-style keys of
// rawConfig do not cover. Pointers tell "absent" from zero.
type rawOPT struct {
	FFNDim                    *int   `json:"ffn_dim"`
	MaxPositionEmbeddings     *int   `json:"max_position_embeddings"`
	WordEmbedProjDim          *int   `json:"word_embed_proj_dim"`
	DoLayerNormBefore         *bool  `json:"do_layer_norm_before"`
	RemoveFinalLayerNorm      bool   `json:"_remove_final_layer_norm"`
	ActivationFunction        string `json:"activation_function"`
	EnableBias                *bool  `json:"enable_bias"`
	LayerNormElementwiseAffin *bool  `json:"layer_norm_elementwise_affine"`
}

// The defaults of transformers' OPTConfig where a config.json leaves a key
// out, and nn.LayerNorm's epsilon (OPT's configs have none).
const (
	optBOS          = 2
	optEOS          = 2
	optLayerNormEps = 1e-5
)

// parseOPT reads an OPTForCausalLM config.json (transformers'
// configuration_opt.py): the sizes are required, the switches take
// OPTConfig's defaults (pre-LayerNorm, word_embed_proj_dim = hidden_size,
// ReLU, biases, a tied LM head, BOS = EOS = 2 "</s>"). What this package
// does not compute is refused with the key named: another activation,
// projections without biases, LayerNorms without weights.
func parseOPT(b []byte, r rawConfig, present map[string]json.RawMessage) (*Config, error) {
	var o rawOPT
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	c := &Config{Architecture: "OPTForCausalLM", BOSTokenID: optBOS, EOSTokenIDs: []int{optEOS}, TorchDtype: r.TorchDtype,
		TieEmbeddings: true, LayerNormEps: optLayerNormEps}
	if raw, ok := present["quantization_config"]; ok && !isNull(raw) {
		return nil, fmt.Errorf(`"quantization_config": quantized checkpoints are not supported (float32, bfloat16 or float16 weights only)`)
	}
	if err := readSizes([]sizeField{
		{"vocab_size", r.VocabSize, &c.VocabSize, 1 << 24},
		{"hidden_size", r.HiddenSize, &c.HiddenSize, 1 << 17},
		{"ffn_dim", o.FFNDim, &c.IntermediateSize, 1 << 20},
		{"num_hidden_layers", r.NumHiddenLayers, &c.NumLayers, 1 << 12},
		{"num_attention_heads", r.NumAttentionHeads, &c.NumHeads, 1 << 12},
		{"max_position_embeddings", o.MaxPositionEmbeddings, &c.MaxPositions, 1 << 20},
	}); err != nil {
		return nil, err
	}
	if c.HiddenSize%c.NumHeads != 0 {
		return nil, fmt.Errorf(`"hidden_size" %d must be a multiple of "num_attention_heads" %d`, c.HiddenSize, c.NumHeads)
	}
	c.NumKVHeads, c.HeadDim = c.NumHeads, c.HiddenSize/c.NumHeads
	c.WordEmbedDim = c.HiddenSize
	if o.WordEmbedProjDim != nil {
		if err := readSizes([]sizeField{{"word_embed_proj_dim", o.WordEmbedProjDim, &c.WordEmbedDim, 1 << 17}}); err != nil {
			return nil, err
		}
	}
	if act := o.ActivationFunction; act != "" && act != "relu" {
		return nil, fmt.Errorf(`unsupported "activation_function" %s (only relu)`, clip.Quote(act))
	}
	if o.EnableBias != nil && !*o.EnableBias {
		return nil, fmt.Errorf(`"enable_bias" false is not supported (OPT's projections have biases)`)
	}
	if o.LayerNormElementwiseAffin != nil && !*o.LayerNormElementwiseAffin {
		return nil, fmt.Errorf(`"layer_norm_elementwise_affine" false is not supported (LayerNorms with a weight and a bias only)`)
	}
	c.PostNorm = o.DoLayerNormBefore != nil && !*o.DoLayerNormBefore
	// OPTDecoder has a final LayerNorm only before-norm, and not where
	// _remove_final_layer_norm keeps checkpoints older than transformers
	// 4.20.1 working.
	c.NoFinalNorm = c.PostNorm || o.RemoveFinalLayerNorm
	if r.TieWordEmbeddings != nil {
		c.TieEmbeddings = *r.TieWordEmbeddings
	}
	if err := specialTokens(r, c); err != nil {
		return nil, err
	}
	return c, nil
}

// marshalOPT renders an OPT config as an HF config.json.
func (c *Config) marshalOPT(dtype string) ([]byte, error) {
	j := map[string]any{
		"architectures":                 []string{c.Architecture},
		"model_type":                    "opt",
		"vocab_size":                    c.VocabSize,
		"hidden_size":                   c.HiddenSize,
		"ffn_dim":                       c.IntermediateSize,
		"num_hidden_layers":             c.NumLayers,
		"num_attention_heads":           c.NumHeads,
		"max_position_embeddings":       c.MaxPositions,
		"word_embed_proj_dim":           c.WordEmbedDim,
		"do_layer_norm_before":          !c.PostNorm,
		"_remove_final_layer_norm":      !c.PostNorm && c.NoFinalNorm,
		"activation_function":           "relu",
		"enable_bias":                   true,
		"layer_norm_elementwise_affine": true,
		"tie_word_embeddings":           c.TieEmbeddings,
		"pad_token_id":                  1,
		"dropout":                       0.0,
		"attention_dropout":             0.0,
		"torch_dtype":                   dtype,
	}
	if c.BOSTokenID >= 0 {
		j["bos_token_id"] = c.BOSTokenID
	}
	if len(c.EOSTokenIDs) == 1 {
		j["eos_token_id"] = c.EOSTokenIDs[0]
	} else if len(c.EOSTokenIDs) > 1 {
		j["eos_token_id"] = c.EOSTokenIDs
	}
	return json.MarshalIndent(j, "", "  ")
}

// optParams is Params of an OPT model: per layer the four attention
// projections and fc1, fc2, each with its bias, and two LayerNorms (weight
// and bias); the learned positions (max_position_embeddings + 2 rows, not
// counted among the embeddings: model cards give OPT's total only),
// project_in and project_out where word_embed_proj_dim differs from the
// hidden size, the final LayerNorm unless it has none, and the token
// embeddings (twice when the LM head is untied).
func (c *Config) optParams() (total, nonEmbedding int64) {
	d, e, f := int64(c.HiddenSize), int64(c.embedDim()), int64(c.IntermediateSize)
	layer := 4*(d*d+d) + (f*d + f) + (d*f + d) + 2*2*d
	nonEmbedding = int64(c.NumLayers)*layer + int64(c.MaxPositions+optPositionOffset)*d
	if e != d {
		nonEmbedding += 2 * d * e
	}
	if !c.NoFinalNorm {
		nonEmbedding += 2 * d
	}
	embed := int64(c.VocabSize) * e
	total = nonEmbedding + embed
	if !c.TieEmbeddings {
		total += embed
	}
	return total, nonEmbedding
}

// IsOPT says whether the config is an OPT model's (learned positions,
// LayerNorm blocks with biases, ReLU).
func (c *Config) IsOPT() bool { return c.Architecture == "OPTForCausalLM" }

// LayersName is the HF module path of the decoder layers, as state-dict
// and PEFT keys name them: "model.layers", OPT's "model.decoder.layers",
// Ministral-3's multimodal checkpoint's "model.language_model.layers"
// (transformers 5's module tree, beside model.vision_tower and
// model.multi_modal_projector), so that PEFT applies an adapter saved
// under it to the language model of the real checkpoint.
func (c *Config) LayersName() string {
	switch {
	case c.IsOPT():
		return "model.decoder.layers"
	case c.Multimodal:
		return "model.language_model.layers"
	}
	return "model.layers"
}

// embedDim is the width of the token embeddings and of the LM head's rows:
// OPT's word_embed_proj_dim, else the hidden size.
func (c *Config) embedDim() int {
	if c.WordEmbedDim > 0 {
		return c.WordEmbedDim
	}
	return c.HiddenSize
}
