package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// FuzzParseConfig: config.json's parser, then what loading derives from the
// config before it reads any tensor (RoPE's inverse frequencies): an error
// or a config, never a panic. (Its seeds run in every go test; make fuzz
// fuzzes it.)
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"architectures":["LlamaForCausalLM"],"vocab_size":128256,"hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":16,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,"rms_norm_eps":1e-05,"rope_theta":500000.0,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":true,"bos_token_id":128000,"eos_token_id":128001,"torch_dtype":"bfloat16"}`,
		`{"architectures":["Qwen3ForCausalLM"],"vocab_size":151936,"hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"rms_norm_eps":1e-06,"rope_theta":1000000,"rope_scaling":null,"sliding_window":null,"use_sliding_window":false,"max_window_layers":28,"tie_word_embeddings":true,"eos_token_id":151645}`,
		// Qwen/Qwen2.5-0.5B-Instruct's, and Llama with both bias keys.
		`{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151645,"hidden_act":"silu","hidden_size":896,"initializer_range":0.02,"intermediate_size":4864,"max_position_embeddings":32768,"max_window_layers":21,"model_type":"qwen2","num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_cache":true,"use_sliding_window":false,"vocab_size":151936}`,
		`{"architectures":["LlamaForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"attention_bias":true,"mlp_bias":true}`,
		`{"architectures":["Qwen3ForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"head_dim":4,"rope_parameters":{"rope_theta":10000,"rope_type":"default"}}`,
		// facebook/opt-1.3b's and facebook/opt-350m's (post-norm, word_embed_proj_dim 512).
		`{"activation_dropout":0.0,"activation_function":"relu","architectures":["OPTForCausalLM"],"attention_dropout":0.0,"bos_token_id":2,"do_layer_norm_before":true,"dropout":0.1,"eos_token_id":2,"ffn_dim":8192,"hidden_size":2048,"init_std":0.02,"layerdrop":0.0,"max_position_embeddings":2048,"model_type":"opt","num_attention_heads":32,"num_hidden_layers":24,"pad_token_id":1,"prefix":"</s>","torch_dtype":"float16","use_cache":true,"vocab_size":50272,"word_embed_proj_dim":2048}`,
		`{"activation_function":"relu","architectures":["OPTForCausalLM"],"bos_token_id":2,"do_layer_norm_before":false,"eos_token_id":2,"ffn_dim":4096,"hidden_size":1024,"max_position_embeddings":2048,"model_type":"opt","num_attention_heads":16,"num_hidden_layers":24,"pad_token_id":1,"torch_dtype":"float16","vocab_size":50272,"word_embed_proj_dim":512}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		ropeInvFreq(c)
	})
}

// FuzzParseViTConfig: a ViT's config.json (ViTForImageClassification, or a
// ViTModel such as google/vit-base-patch16-224-in21k's): an error or a
// config whose sizes fit, never a panic.
func FuzzParseViTConfig(f *testing.F) {
	for _, s := range []string{
		`{"architectures":["ViTModel"],"attention_probs_dropout_prob":0.0,"hidden_act":"gelu","hidden_dropout_prob":0.0,"hidden_size":768,"image_size":224,"initializer_range":0.02,"intermediate_size":3072,"layer_norm_eps":1e-12,"model_type":"vit","num_attention_heads":12,"num_channels":3,"num_hidden_layers":12,"patch_size":16,"qkv_bias":true}`,
		`{"architectures":["ViTForImageClassification"],"hidden_size":64,"image_size":64,"intermediate_size":128,"num_attention_heads":4,"num_hidden_layers":3,"patch_size":16,"id2label":{"0":"a","1":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseViTConfig(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if c.Tokens() < 2 || c.HeadDim() < 1 || c.PixelsPerImage() < 1 || c.ParamCount() < 1 {
			t.Fatalf("a config whose sizes do not fit: %+v", c)
		}
	})
}

// FuzzLoadDir: a model directory from a stranger, its config.json and
// weights chosen by the fuzzer, through Load and, when it loads, a forward
// pass with a loss: an error naming the directory, never a panic, a hang or
// gigabytes (fuzzguard), and a model that loads computes. The weights are
// model.safetensors, or, with an index, the one shard
// model-00001-of-00001.safetensors that model.safetensors.index.json lists.
// The seeds are tiny random Llama, Qwen3 and OPT models saved by Save, in
// float32 and bfloat16, whole and with an index, and an index where the
// config should be (a mistake a user makes).
func FuzzLoadDir(f *testing.F) {
	const shard = "model-00001-of-00001.safetensors"
	for _, cfg := range []string{
		`{"architectures":["LlamaForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"rms_norm_eps":1e-05,"rope_theta":500000.0,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":true,"bos_token_id":1,"eos_token_id":2}`,
		`{"architectures":["Qwen3ForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"rms_norm_eps":1e-06,"rope_theta":1000000,"tie_word_embeddings":false,"eos_token_id":2}`,
		`{"activation_function":"relu","architectures":["OPTForCausalLM"],"bos_token_id":2,"do_layer_norm_before":false,"eos_token_id":2,"ffn_dim":8,"hidden_size":8,"max_position_embeddings":4,"model_type":"opt","num_attention_heads":2,"num_hidden_layers":1,"pad_token_id":1,"vocab_size":8,"word_embed_proj_dim":4}`,
	} {
		c, err := ParseConfig([]byte(cfg))
		if err != nil {
			f.Fatal(err)
		}
		for _, bf16 := range []bool{false, true} {
			m, err := NewRandomWith(c, 1, 0.5, LoadOptions{BF16Weights: bf16})
			if err != nil {
				f.Fatal(err)
			}
			src, dir := f.TempDir(), f.TempDir()
			if err := os.WriteFile(filepath.Join(src, "config.json"), []byte(cfg), 0o644); err != nil {
				f.Fatal(err)
			}
			if err := m.Save(dir, SaveOptions{Source: src}); err != nil {
				f.Fatal(err)
			}
			weights, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				f.Fatal(err)
			}
			f.Add([]byte(cfg), weights, []byte(nil))
			st, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				f.Fatal(err)
			}
			index := map[string]string{}
			for _, ti := range st.Tensors() {
				index[ti.Name] = shard
			}
			st.Close()
			b, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": len(weights)}, "weight_map": index})
			if err != nil {
				f.Fatal(err)
			}
			f.Add([]byte(cfg), weights, b)
			m.Free()
		}
	}
	f.Add([]byte(`{"metadata":{"total_size":64},"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors"}}`), []byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"), []byte(nil))
	dir := filepath.Join(f.TempDir(), "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cfg, weights, index []byte) {
		files := map[string][]byte{"config.json": cfg, "model.safetensors": weights}
		os.Remove(filepath.Join(dir, "model.safetensors"))
		os.Remove(filepath.Join(dir, "model.safetensors.index.json"))
		if len(index) > 0 {
			files = map[string][]byte{"config.json": cfg, shard: weights, "model.safetensors.index.json": index}
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fuzzguard.Run(func() {
			m, err := LoadWith(dir, LoadOptions{Backend: cpu.New(cpu.Options{Threads: 1})})
			if err != nil {
				if !strings.Contains(err.Error(), dir) {
					t.Fatalf("the error does not name the directory: %v", err)
				}
				return
			}
			defer m.Free()
			in := Input{B: 1, T: 2, Tokens: []int{0, m.VocabSize - 1}}
			if _, err := m.Forward(in, Options{Labels: []int{-100, 0}}); err != nil {
				t.Fatalf("a model that loads does not compute: %v", err)
			}
		})
	})
}
