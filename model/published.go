package model

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Published is a model the project runs whose publisher's config.json is
// built in, verbatim: random-weight models of its shapes (meazo-inspect
// random-model, meazo-bench) need neither a download nor the test fixtures,
// and an error about a missing download can say what to download.
type Published struct {
	Name  string // the model's name on the Hugging Face hub, "Llama-3.2-1B"
	Repo  string // its repository, "meta-llama/Llama-3.2-1B"
	Short string // the configs' short name, "llama1b"
	// Gated: the hub serves the weights only to a logged-in user who has
	// accepted the model's licence on its page.
	Gated bool
	// Aliases are other names that mean this model: a repository that
	// publishes the same weights in a form meazo-go does not load.
	Aliases []string
	// Include, where set, are hf download's --include patterns: the files a
	// run reads, where the repository also holds the weights in formats
	// meazo-go does not read.
	Include []string
	// Convert is the command, run on the download's directory, that writes
	// the model.safetensors meazo-go reads from what the repository ships
	// ("": none needed).
	Convert string
	JSON    string // config.json as published
}

// Download is the commands that download the model into dir (and convert
// its weights where they need it), one a line, as the README gives them.
func (p Published) Download(dir string) string {
	cmd := "hf download " + p.Repo
	if len(p.Include) > 0 {
		cmd += " --include"
		for _, pat := range p.Include {
			if strings.ContainsAny(pat, "*?[") {
				pat = `"` + pat + `"` // for the shell to pass it on
			}
			cmd += " " + pat
		}
	}
	cmd += " --local-dir " + dir
	if p.Convert != "" {
		cmd += "\n" + p.Convert + " " + dir
	}
	return cmd
}

// Config parses the built-in config.json.
func (p Published) Config() (*Config, error) {
	c, err := ParseConfig([]byte(p.JSON))
	if err != nil {
		return nil, fmt.Errorf("built-in config of %s: %w", p.Repo, err)
	}
	return c, nil
}

// PublishedModels lists the built-in models, smallest first.
func PublishedModels() []Published { return published }

// PublishedNames lists the built-in models for messages: each one's name
// and, in brackets, its short name ("Qwen3-0.6B (qwen06b), …").
func PublishedNames() string {
	var names []string
	for _, p := range published {
		names = append(names, p.Name+" ("+p.Short+")")
	}
	return strings.Join(names, ", ")
}

// LookupPublished finds a built-in model by its name ("Qwen3-0.6B"), its
// repository ("Qwen/Qwen3-0.6B"), its short name ("qwen06b"), one of its
// aliases, or a path whose last element is its name ("models/Qwen3-0.6B",
// where the README's download puts it), in any case.
func LookupPublished(name string) (Published, bool) {
	base := filepath.Base(filepath.Clean(name))
	for _, p := range published {
		for _, n := range append([]string{p.Name, p.Repo, p.Short}, p.Aliases...) {
			if strings.EqualFold(name, n) || strings.EqualFold(base, n) {
				return p, true
			}
		}
	}
	return Published{}, false
}

// published: the config.json of each model as its repository serves it.
// Llama-3.2-1B and Qwen3-0.6B are held to the copies in the shared fixtures
// (fixtures/models/full-configs, whose SOURCES.md says where they come
// from) by TestPublishedConfigs; Qwen3-8B is the text of
// huggingface.co/Qwen/Qwen3-8B/blob/main/config.json as quoted by two
// independent code bases (an XLA benchmark that cites that address, and
// MindSpeed-LLM's FSDP2 guide), and TestPublishedSizes holds it to the
// parameter counts of the model card (8.2B, 6.95B without embeddings).
//
// opt-1.3b is the text of huggingface.co/facebook/opt-1.3b's config.json as
// the Hub's blame page of it shows it (653 bytes, the size the Hub lists for
// the file at commit f39e497, "Add flax_weights", on main); the values agree
// with the copy in EasyDeL's configs.py (opt_configs["1.3b"], which leaves
// out _name_or_path, architectures, torch_dtype and transformers_version).
// TestPublishedSizes holds it to 1,315,758,080 parameters, which
// transformers 4.51's OPTForCausalLM built from it counts (the LM head tied
// to the embeddings, as OPT's is).
//
// Qwen2.5-0.5B-Instruct is the text of huggingface.co/Qwen/Qwen2.5-0.5B-
// Instruct's config.json as two independent code bases hold it: a model card
// of a copy that says it duplicated the repository and changed only
// architectures and model_type (quoted whole, key for key), and a pinning
// script that refuses any other key or value (each key's value); the same
// file as Qwen2.5-1.5B-Instruct's but for the four sizes. TestPublishedSizes
// holds it to the model card's 0.49B parameters (0.36B without the
// embeddings), and exactly to the 494,032,768 that transformers 4.51's
// Qwen2ForCausalLM of it counts (the LM head tied).
//
// Ministral-3-14B-Instruct-2512-BF16 is model/testdata/ministral3's
// config.json (TestPublishedMinistral holds the two to the same text),
// which is reconstructed, not a copy of the Hub's file: its sizes agree
// with two independent listings of the checkpoint's tensors (13,506,073,600
// language-model and 438,958,080 vision-tower and projector parameters,
// which give the paper's 13,945,031,680), and θ = 1e9 with two secondary
// sources; the keys a random model does not read (the vision tower's) were
// not checked against the real file (docs/MODELS.md). The repository
// without -BF16, which the paper names, publishes the same model in FP8,
// which meazo-go does not load: its names are this one's aliases, so that
// a download message names the BF16 repository.
var published = []Published{
	{Name: "Qwen2.5-0.5B-Instruct", Repo: "Qwen/Qwen2.5-0.5B-Instruct", Short: "qwen25-05b-instruct", JSON: `
{
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
`},
	{Name: "Qwen3-0.6B", Repo: "Qwen/Qwen3-0.6B", Short: "qwen06b", JSON: `
{
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
`},
	{Name: "Llama-3.2-1B", Repo: "meta-llama/Llama-3.2-1B", Short: "llama1b", Gated: true, JSON: `
{
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}
`},
	// The repository's weights are pytorch_model.bin (float16), tf_model.h5
	// and flax_model.msgpack: the first is downloaded and converted.
	{Name: "opt-1.3b", Repo: "facebook/opt-1.3b", Short: "opt1.3b", Include: []string{"*.json", "*.txt", "pytorch_model.bin"},
		Convert: "python3 scripts/bin_to_safetensors.py", JSON: `
{
  "_name_or_path": "facebook/opt-1.3b",
  "activation_dropout": 0.0,
  "activation_function": "relu",
  "architectures": [
    "OPTForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 2,
  "do_layer_norm_before": true,
  "dropout": 0.1,
  "eos_token_id": 2,
  "ffn_dim": 8192,
  "hidden_size": 2048,
  "init_std": 0.02,
  "layerdrop": 0.0,
  "max_position_embeddings": 2048,
  "model_type": "opt",
  "num_attention_heads": 32,
  "num_hidden_layers": 24,
  "pad_token_id": 1,
  "prefix": "</s>",
  "torch_dtype": "float16",
  "transformers_version": "4.21.0.dev0",
  "use_cache": true,
  "vocab_size": 50272,
  "word_embed_proj_dim": 2048
}
`},
	{Name: "Qwen3-8B", Repo: "Qwen/Qwen3-8B", Short: "qwen3-8b", JSON: `
{
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 12288,
  "max_position_embeddings": 40960,
  "max_window_layers": 36,
  "model_type": "qwen3",
  "num_attention_heads": 32,
  "num_hidden_layers": 36,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}
`},
	{Name: "Ministral-3-14B-Instruct-2512-BF16", Repo: "mistralai/Ministral-3-14B-Instruct-2512-BF16", Short: "ministral14b",
		Aliases: []string{"Ministral-3-14B-Instruct-2512", "mistralai/Ministral-3-14B-Instruct-2512"}, JSON: `
{
  "architectures": [
    "Mistral3ForConditionalGeneration"
  ],
  "image_token_index": 10,
  "model_type": "mistral3",
  "multimodal_projector_bias": false,
  "projector_hidden_act": "gelu",
  "spatial_merge_size": 2,
  "text_config": {
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 16384,
    "max_position_embeddings": 262144,
    "model_type": "ministral3",
    "num_attention_heads": 32,
    "num_hidden_layers": 40,
    "num_key_value_heads": 8,
    "pad_token_id": 11,
    "rms_norm_eps": 1e-05,
    "rope_parameters": {
      "beta_fast": 32.0,
      "beta_slow": 1.0,
      "factor": 16.0,
      "llama_4_scaling_beta": 0.1,
      "mscale": 1.0,
      "mscale_all_dim": 1.0,
      "original_max_position_embeddings": 16384,
      "rope_theta": 1000000000.0,
      "rope_type": "yarn",
      "type": "yarn"
    },
    "sliding_window": null,
    "tie_word_embeddings": false,
    "use_cache": true,
    "vocab_size": 131072
  },
  "torch_dtype": "bfloat16",
  "vision_config": {
    "attention_dropout": 0.0,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 1024,
    "image_size": 1540,
    "intermediate_size": 4096,
    "model_type": "pixtral",
    "num_attention_heads": 16,
    "num_channels": 3,
    "num_hidden_layers": 24,
    "patch_size": 14,
    "rope_theta": 10000.0
  },
  "vision_feature_layer": -1
}
`},
}

// Params counts the model's weights as its checkpoint holds them: all of
// them (an untied lm_head.weight included), and all but the embeddings
// (embed_tokens and an untied lm_head), as model cards state sizes. Of a
// Mistral3ForConditionalGeneration checkpoint it counts the language
// model, the weights meazo-go reads (the vision tower and the projector
// are never loaded).
func (c *Config) Params() (total, nonEmbedding int64) {
	if c.IsOPT() {
		return c.optParams()
	}
	d, hd := int64(c.HiddenSize), int64(c.HeadDim)
	q, kv := int64(c.NumHeads)*hd, int64(c.NumKVHeads)*hd
	f := int64(c.IntermediateSize)
	layer := 2*d*q + 2*d*kv + 3*d*f + 2*d // q, o; k, v; the MLP; two norms
	if c.QKNorm {
		layer += 2 * hd
	}
	if c.QKVBias {
		layer += q + 2*kv
	}
	if c.OBias {
		layer += d
	}
	if c.MLPBias {
		layer += 2*f + d
	}
	nonEmbedding = int64(c.NumLayers)*layer + d // and the final norm
	embed := int64(c.VocabSize) * d
	total = nonEmbedding + embed
	if !c.TieEmbeddings {
		total += embed
	}
	return total, nonEmbedding
}
