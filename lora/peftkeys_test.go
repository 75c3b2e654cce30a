package lora

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peft015Config is adapter_config.json as PEFT 0.15.2 writes it (the
// fixtures' qwen3-tiny adapter's).
const peft015Config = `{"alpha_pattern": {}, "auto_mapping": null, "base_model_name_or_path": "..", "bias": "none",
  "corda_config": null, "eva_config": null, "exclude_modules": null, "fan_in_fan_out": false, "inference_mode": true,
  "init_lora_weights": true, "layer_replication": null, "layers_pattern": null, "layers_to_transform": null,
  "loftq_config": {}, "lora_alpha": 8, "lora_bias": false, "lora_dropout": 0.0, "megatron_config": null,
  "megatron_core": "megatron.core", "modules_to_save": null, "peft_type": "LORA", "r": 4, "rank_pattern": {},
  "revision": null, "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM", "trainable_token_indices": null,
  "use_dora": false, "use_rslora": false`

// TestPEFTConfigKeysAppliedOrRefused: a key of adapter_config.json that
// changes what the adapter computes is applied or refused, naming the file
// and the key, and never ignored; keys of a newer PEFT left at their off
// value still load.
func TestPEFTConfigKeysAppliedOrRefused(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{``, ""},
		{`, "use_qalora": false, "target_parameters": null, "alora_invocation_tokens": null, "ensure_weight_tying": false`, ""},
		{`, "init_lora_weights": "gaussian", "revision": "main", "inference_mode": false`, ""},
		{`, "exclude_modules": ["model.layers.0.self_attn.q_proj"]`, `exclude_modules is ["model.layers.0.self_attn.q_proj"], which this loader does not apply`},
		{`, "layer_replication": [[0, 2], [1, 3]]`, "layer_replication is [[0, 2], [1, 3]]"},
		{`, "megatron_config": {"tensor_model_parallel_size": 2}`, "megatron_config is"},
		{`, "target_parameters": ["mlp.experts.down_proj"]`, "target_parameters is"},
		{`, "alora_invocation_tokens": [128000, 9]`, "alora_invocation_tokens is [128000, 9]"},
		{`, "use_qalora": true`, "use_qalora is true"},
	} {
		path := filepath.Join(t.TempDir(), "adapter_config.json")
		if err := os.WriteFile(path, []byte(peft015Config+c.extra+"}"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPEFTConfig(path)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s: %v, want %q", c.extra, err, c.want)
		}
	}
}
