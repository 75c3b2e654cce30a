package model

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// tinyConfig is a small config of a Llama-like architecture (Qwen3's q/k
// norms, Qwen2's q/k/v biases, Llama's llama3 RoPE scaling) for tests that
// need no fixtures.
func tinyConfig(arch string) *Config {
	c := &Config{
		Architecture: arch, VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6,
		TieEmbeddings: true, BOSTokenID: -1, EOSTokenIDs: []int{2},
	}
	switch arch {
	case "Qwen3ForCausalLM":
		c.QKNorm = true
	case "Qwen2ForCausalLM":
		c.QKVBias = true
	default:
		c.RopeScaling = &RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	}
	return c
}

// biasConfigs are tiny configs of every combination of projection biases
// the Llama-like architectures have: Qwen2's q/k/v, Llama's attention_bias
// and mlp_bias, Qwen3's attention_bias (with its q/k norms), by name.
func biasConfigs() map[string]*Config {
	llama := tinyConfig("LlamaForCausalLM")
	llama.QKVBias, llama.OBias, llama.MLPBias = true, true, true
	mlpOnly := tinyConfig("LlamaForCausalLM")
	mlpOnly.MLPBias = true
	qwen3 := tinyConfig("Qwen3ForCausalLM")
	qwen3.QKVBias, qwen3.OBias = true, true
	return map[string]*Config{"qwen2": tinyConfig("Qwen2ForCausalLM"), "llama-attention-mlp-bias": llama,
		"llama-mlp-bias": mlpOnly, "qwen3-attention-bias": qwen3}
}

// TestWriteRandomRoundTrip writes random models, F32 and BF16, and reads
// them back: the same config and logits as NewRandomWith's model of the
// same seed (the values WriteRandom promises), and a BF16 checkpoint's
// matrices kept in bfloat16 with BF16Weights.
func TestWriteRandomRoundTrip(t *testing.T) {
	for _, arch := range []string{"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"} {
		for _, bf16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bf16=%v", arch, bf16), func(t *testing.T) {
				dir := t.TempDir()
				write := WriteRandom
				if bf16 {
					write = WriteRandomBF16
				}
				if err := write(dir, tinyConfig(arch), 7, 0.2); err != nil {
					t.Fatal(err)
				}
				mem, err := NewRandomWith(tinyConfig(arch), 7, 0.2, LoadOptions{BF16Weights: bf16})
				if err != nil {
					t.Fatal(err)
				}
				in := Input{B: 2, T: 5, Tokens: []int{1, 5, 9, 3, 4, 7, 8, 2, 0, 0}, Mask: []int{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}}
				a, err := mem.Forward(in, Options{Logits: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, keep := range []bool{false, true} {
					disk, err := LoadWith(dir, LoadOptions{BF16Weights: keep})
					if err != nil {
						t.Fatal(err)
					}
					if disk.Config.RMSNormEps != mem.Config.RMSNormEps || disk.QKNorm != mem.QKNorm || disk.QKVBias != mem.QKVBias ||
						(disk.RopeScaling == nil) != (mem.RopeScaling == nil) {
						t.Fatalf("config changed in the round trip: %+v vs %+v", disk.Config, mem.Config)
					}
					if got := disk.Embed.(*cpu.Packed).IsBF16(); got != (bf16 && keep) {
						t.Fatalf("loaded with BF16Weights %v, the embedding is bfloat16: %v", keep, got)
					}
					b, err := disk.Forward(in, Options{Logits: true})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(a.Logits, b.Logits) {
						t.Fatalf("logits of the written and reloaded model (BF16Weights %v) differ from the in-memory one", keep)
					}
				}
			})
		}
	}
}

// TestLoadErrors checks that broken checkpoints give one-line errors naming
// the file and the problem.
func TestLoadErrors(t *testing.T) {
	good := t.TempDir()
	if err := WriteRandom(good, tinyConfig("LlamaForCausalLM"), 1, 0.2); err != nil {
		t.Fatal(err)
	}
	weights, _ := os.ReadFile(filepath.Join(good, "model.safetensors"))
	config, _ := os.ReadFile(filepath.Join(good, "config.json"))

	cases := []struct {
		name   string
		mutate func(dir string)
		want   []string // substrings the error must contain
	}{
		{"missing config", func(dir string) { os.Remove(filepath.Join(dir, "config.json")) }, []string{"config.json"}},
		{"unknown architecture", func(dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(config), "LlamaForCausalLM", "GPT2LMHeadModel", 1)), 0o644)
		}, []string{"config.json", "GPT2LMHeadModel"}},
		{"an image classifier", func(dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(config), "LlamaForCausalLM", "ViTForImageClassification", 1)), 0o644)
		}, []string{"config.json", "is an image classifier, not a language model", "--task pets"}},
		{"truncated weights", func(dir string) {
			os.WriteFile(filepath.Join(dir, "model.safetensors"), weights[:len(weights)/2], 0o644)
		}, []string{"model.safetensors"}},
		{"missing weights", func(dir string) { os.Remove(filepath.Join(dir, "model.safetensors")) }, []string{"model.safetensors"}},
		{"shape mismatch", func(dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(config), `"intermediate_size": 64`, `"intermediate_size": 96`, 1)), 0o644)
		}, []string{"mlp.gate_proj.weight", "shape"}},
		{"fewer layers than the weights", func(dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(config), `"num_hidden_layers": 2`, `"num_hidden_layers": 1`, 1)), 0o644)
		}, []string{"has no use for (model.layers.1.", "and 6 more", "config.json does not describe these weights"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "config.json"), config, 0o644)
			os.WriteFile(filepath.Join(d, "model.safetensors"), weights, 0o644)
			tc.mutate(d)
			_, err := Load(d)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			t.Log(msg)
		})
	}
}

// TestQwen3SlidingWindowDefault follows HF 4.51: Qwen3Config's sliding_window
// defaults to 4096 when config.json lacks the key; null means none.
func TestQwen3SlidingWindowDefault(t *testing.T) {
	base := `{"architectures":["Qwen3ForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"head_dim":4%s}`
	for _, tc := range []struct {
		extra string
		want  int
	}{{"", 4096}, {`,"sliding_window":null`, 0}, {`,"sliding_window":128`, 128}} {
		c, err := ParseConfig([]byte(fmt.Sprintf(base, tc.extra)))
		if err != nil {
			t.Fatal(err)
		}
		if c.SlidingWindow != tc.want {
			t.Errorf("%q: sliding window %d, want %d", tc.extra, c.SlidingWindow, tc.want)
		}
	}
}

// TestConfigRejectsNonPositiveNormAndRope: rms_norm_eps and rope_theta must be
// positive and finite (a zero eps divides by zero on an all-zero row; a zero
// theta makes every rotation NaN), and so must the frequencies they give (a
// θ of 1e-300 overflows them) and llama3 scaling's factors.
func TestConfigRejectsNonPositiveNormAndRope(t *testing.T) {
	base := `{"architectures":["Qwen3ForCausalLM"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"head_dim":4%s}`
	for _, tc := range []struct{ extra, want string }{
		{`,"rms_norm_eps":0`, `"rms_norm_eps" must be positive`},
		{`,"rms_norm_eps":-1e-6`, `"rms_norm_eps" must be positive`},
		{`,"rms_norm_eps":1e-60`, `"rms_norm_eps" must be positive`}, // 0 as a float32
		{`,"rope_theta":0`, `"rope_theta" must be positive`},
		{`,"rope_theta":-10000`, `"rope_theta" must be positive`},
		{`,"rms_norm_eps":1e-6,"rope_theta":1e6`, ""},
		// Positive, yet the rotations would not be finite.
		{`,"rope_theta":1e-300`, `"rope_theta" make RoPE's inverse frequency 1`},
		{`,"rope_theta":1e-60`, `the rotation angles would not be finite`}, // 0 as a float32
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":0,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`, `factor must be positive and finite`},
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":-8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`, `factor must be positive`},
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":0,"high_freq_factor":4,"original_max_position_embeddings":8192}`, `low_freq_factor must be positive`},
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":1e-50}`, `original_max_position_embeddings must be positive and finite (as a float32)`},
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":1e-40,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`, `the rotation angles would not be finite`},
		{`,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3","factor":32,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}`, ""},
	} {
		_, err := ParseConfig([]byte(fmt.Sprintf(base, tc.extra)))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// TestConfigArchitecture: the class comes from "architectures", or, where
// it names none or the family's base class (a model saved from LlamaModel,
// Qwen3Model), from "model_type", as AutoModelForCausalLM picks it
// (transformers 4.51's _get_model_class: the model_type's one class,
// "architectures" unread).
func TestConfigArchitecture(t *testing.T) {
	base := `{%s"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":2,"head_dim":4}`
	for _, tc := range []struct{ keys, want, err string }{
		{`"architectures":["Qwen3ForCausalLM"],`, "Qwen3ForCausalLM", ""},
		{`"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3",`, "Qwen3ForCausalLM", ""},
		{`"model_type":"qwen3",`, "Qwen3ForCausalLM", ""},
		{`"architectures":[],"model_type":"llama",`, "LlamaForCausalLM", ""},
		{`"architectures":["Qwen3Model"],"model_type":"qwen3",`, "Qwen3ForCausalLM", ""},
		{`"architectures":["LlamaModel"],"model_type":"llama",`, "LlamaForCausalLM", ""},
		{`"architectures":["MistralModel"],"model_type":"mistral",`, "MistralForCausalLM", ""},
		{`"architectures":["Qwen2Model"],"model_type":"qwen2",`, "Qwen2ForCausalLM", ""},
		{`"architectures":["LlamaModel"],`, "", `unsupported architecture "LlamaModel"`},
		{`"architectures":["LlamaModel"],"model_type":"qwen3",`, "", `unsupported architecture "LlamaModel"`},
		{`"architectures":["GPT2LMHeadModel"],"model_type":"gpt2",`, "", `unsupported architecture "GPT2LMHeadModel"`},
		{`"model_type":"gpt2",`, "", `"architectures" is absent and "model_type" "gpt2" is none of llama, ministral3, mistral, opt, qwen2, qwen3`},
		{``, "", `"architectures" is absent and "model_type" "" is none of`},
		{`"architectures":["LlamaForCausalLM","LlamaModel"],"model_type":"llama",`, "", `"architectures" must name exactly one class`},
		// transformers' ACT2CLS: "swish" is nn.SiLU, as "silu" is.
		{`"architectures":["LlamaForCausalLM"],"hidden_act":"swish",`, "LlamaForCausalLM", ""},
		{`"architectures":["LlamaForCausalLM"],"hidden_act":"gelu",`, "", `unsupported "hidden_act" "gelu"`},
	} {
		c, err := ParseConfig([]byte(fmt.Sprintf(base, tc.keys)))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.keys, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.keys, err)
		case tc.err == "" && c.Architecture != tc.want:
			t.Errorf("%s: architecture %s, want %s", tc.keys, c.Architecture, tc.want)
		}
	}
}

// TestConfigBoundsSizes: sizes far beyond any model are refused before
// anything is allocated for them (fuzzing found head_dim 2^62 panicking in
// the RoPE table, and 2^30 asking 2 GiB).
func TestConfigBoundsSizes(t *testing.T) {
	sizes := map[string]int{"vocab_size": 8, "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "head_dim": 4}
	for _, tc := range []struct {
		key  string
		v    int
		want string
	}{
		{"head_dim", 1 << 62, `"head_dim" must be even and in 2..4096, got 4611686018427387904`},
		{"head_dim", 1 << 30, `"head_dim" must be even and in 2..4096`},
		{"vocab_size", 1<<24 + 1, `"vocab_size" must be in 1..16777216, got 16777217`},
		{"hidden_size", 1 << 40, `"hidden_size" must be in 1..131072`},
		{"intermediate_size", 0, `"intermediate_size" must be in 1..1048576, got 0`},
		{"num_hidden_layers", 1 << 20, `"num_hidden_layers" must be in 1..4096`},
		{"head_dim", 4096, ""},
	} {
		fields := []string{`"architectures":["LlamaForCausalLM"]`}
		for k, v := range sizes {
			if k == tc.key {
				v = tc.v
			}
			fields = append(fields, fmt.Sprintf("%q:%d", k, v))
		}
		_, err := ParseConfig([]byte("{" + strings.Join(fields, ",") + "}"))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %d: error %v, want %q", tc.key, tc.v, err, tc.want)
		}
	}
}

// TestRopeAndTieConfig: θ and the llama3 scaling read from transformers 5's
// rope_parameters as from rope_theta and rope_scaling; what would change
// RoPE without being applied is refused; a legacy "type" wins over
// "rope_type", as HF moves it; tie_word_embeddings defaults to false for
// both families, as LlamaConfig and Qwen3Config do.
func TestRopeAndTieConfig(t *testing.T) {
	base := `{"architectures":["%s"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"head_dim":4%s}`
	const llama3 = `"factor":32,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192`
	want := &RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	for _, tc := range []struct {
		arch, extra string
		theta       float64
		scaling     *RopeScaling
		tied        bool
		err         string
	}{
		{"Qwen3ForCausalLM", `,"rope_theta":1e6,"tie_word_embeddings":true`, 1e6, nil, true, ""},
		{"Qwen3ForCausalLM", `,"rope_parameters":{"rope_theta":1e6,"rope_type":"default"}`, 1e6, nil, false, ""},
		{"Qwen3ForCausalLM", `,"rope_parameters":{"rope_theta":1e6}`, 1e6, nil, false, ""},
		{"LlamaForCausalLM", `,"rope_parameters":{"rope_theta":5e5,"rope_type":"llama3",` + llama3 + `}`, 5e5, want, false, ""},
		{"LlamaForCausalLM", `,"rope_theta":5e5,"rope_scaling":{"rope_type":"llama3",` + llama3 + `}`, 5e5, want, false, ""},
		{"LlamaForCausalLM", `,"rope_theta":5e5,"rope_parameters":{"rope_theta":5e5}`, 5e5, nil, false, ""},
		{"LlamaForCausalLM", `,"rope_theta":1e4,"rope_parameters":{"rope_theta":5e5}`, 0, nil, false, `"rope_theta" 10000 and "rope_parameters".rope_theta 500000 disagree`},
		{"LlamaForCausalLM", `,"rope_parameters":{"rope_type":"default"}`, 0, nil, false, `"rope_parameters" has no rope_theta`},
		{"LlamaForCausalLM", `,"rope_theta":null`, 0, nil, false, `"rope_theta" is null`},
		{"LlamaForCausalLM", `,"partial_rotary_factor":0.5`, 0, nil, false, `"partial_rotary_factor" 0.5 is not supported`},
		{"LlamaForCausalLM", `,"rope_parameters":{"rope_theta":1e4,"partial_rotary_factor":0.25}`, 0, nil, false, `partial_rotary_factor 0.25 is not supported`},
		{"LlamaForCausalLM", `,"rope_parameters":{"full_attention":{"rope_theta":1e6}}`, 0, nil, false, `a block per layer type ("full_attention")`},
		{"LlamaForCausalLM", `,"rope_parameters":{"rope_theta":1e4,"rope_type":"yarn","factor":4}`, 0, nil, false, `yarn needs "max_position_embeddings"`},
		{"LlamaForCausalLM", `,"rope_scaling":{"type":"dynamic","rope_type":"llama3",` + llama3 + `}`, 0, nil, false, `unsupported rope_type "dynamic"`},
		{"LlamaForCausalLM", `,"rope_scaling":{"type":"linear"}`, 0, nil, false, `linear needs a factor`},
		{"LlamaForCausalLM", `,"quantization_config":{"quant_method":"gptq","bits":4}`, 0, nil, false, `"quantization_config": quantized checkpoints are not supported`},
	} {
		c, err := ParseConfig([]byte(fmt.Sprintf(base, tc.arch, tc.extra)))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.extra, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.extra, err)
			continue
		}
		if c.RopeTheta != tc.theta || !reflect.DeepEqual(c.RopeScaling, tc.scaling) || c.TieEmbeddings != tc.tied {
			t.Errorf("%s: θ %v, scaling %+v, tied %v; want %v, %+v, %v", tc.extra, c.RopeTheta, c.RopeScaling, c.TieEmbeddings, tc.theta, tc.scaling, tc.tied)
		}
	}
}

// TestNewRandomBF16 builds random models as a BF16 checkpoint would load
// with BF16Weights: the matrices held in bfloat16, the logits those of the
// same bfloat16-rounded values held in float32, bit for bit, and not those
// of the unrounded values.
func TestNewRandomBF16(t *testing.T) {
	for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM"} {
		t.Run(arch, func(t *testing.T) {
			c := tinyConfig(arch)
			b16, err := NewRandomWith(c, 3, 0.3, LoadOptions{BF16Weights: true})
			if err != nil {
				t.Fatal(err)
			}
			if !b16.Layers[0].MLP.Gate.(*cpu.Packed).IsBF16() || !b16.Embed.(*cpu.Packed).IsBF16() {
				t.Fatal("BF16Weights did not keep the random matrices in bfloat16")
			}
			rounded, err := build(c, LoadOptions{}.backend(), true, nil, bf16Loader(randomLoader(3, 0.3, false)))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := NewRandom(c, 3, 0.3)
			if err != nil {
				t.Fatal(err)
			}
			in := Input{B: 1, T: 6, Tokens: []int{1, 5, 9, 40, 3, 77}, Mask: []int{1, 1, 1, 1, 1, 1}}
			logits := func(m *Model) []float32 {
				out, err := m.Forward(in, Options{Logits: true})
				if err != nil {
					t.Fatal(err)
				}
				return out.Logits
			}
			want := logits(rounded)
			if !slices.Equal(logits(b16), want) {
				t.Error("logits with the bfloat16 matrices differ from the same values in float32")
			}
			if slices.Equal(logits(plain), want) {
				t.Error("rounding to bfloat16 changed no logit: the values were not rounded")
			}
		})
	}
}

// TestLoadIgnoresTiedHeadAndInvFreq: the tensors a checkpoint may hold that
// are not weights of the model load without complaint: a tied model's saved
// lm_head.weight (Qwen3-0.6B's checkpoint has one) and rotary_emb.inv_freq
// buffers (HF recomputes them). An untied model reads its lm_head.
func TestLoadIgnoresTiedHeadAndInvFreq(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig("Qwen3ForCausalLM")
	if err := WriteRandom(dir, c, 1, 0.2); err != nil {
		t.Fatal(err)
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tensors []safetensors.Tensor
	for _, n := range ck.Names() {
		v, err := ck.Float32(n)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := ck.Info(n)
		tensors = append(tensors, safetensors.F32Tensor(n, info.Shape, v))
	}
	ck.Close()
	tensors = append(tensors,
		safetensors.F32Tensor("lm_head.weight", []int{c.VocabSize, c.HiddenSize}, make([]float32, c.VocabSize*c.HiddenSize)),
		safetensors.F32Tensor("model.layers.0.self_attn.rotary_emb.inv_freq", []int{c.HeadDim / 2}, make([]float32, c.HeadDim/2)))
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), tensors, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("a tied checkpoint with lm_head.weight and inv_freq: %v", err)
	}
	tensors = append(tensors, safetensors.F32Tensor("score.weight", []int{2, c.HiddenSize}, make([]float32, 2*c.HiddenSize)))
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), tensors, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "(score.weight)") {
		t.Fatalf("an unknown tensor: %v", err)
	}
}

// TestWriteRandomFloats: a written config.json has its floats as Python's
// json writes them (transformers warns on a rope_scaling factor of 32: "must
// be a float"): whole ones with ".0", the rest as they read; and they read
// back to the same values.
func TestWriteRandomFloats(t *testing.T) {
	c := tinyConfig("LlamaForCausalLM")
	c.RopeTheta = 500000
	c.RopeScaling = &RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	dir := t.TempDir()
	if err := WriteRandom(dir, c, 1, 0.2); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"factor": 32.0`, `"low_freq_factor": 1.0`, `"high_freq_factor": 4.0`, `"rope_theta": 500000.0`, `"original_max_position_embeddings": 8192,`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config.json lacks %s:\n%s", want, b)
		}
	}
	for x, want := range map[float64]string{32: "32.0", 0.5: "0.5", 1e-5: "1e-05", 1e21: "1e+21", 123456.25: "123456.25"} {
		if got := string(pyFloat(x)); got != want {
			t.Errorf("pyFloat(%v) = %s, want %s", x, got, want)
		}
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *m.RopeScaling != *c.RopeScaling || m.RopeTheta != c.RopeTheta {
		t.Errorf("read back: %+v, theta %v", *m.RopeScaling, m.RopeTheta)
	}
}
