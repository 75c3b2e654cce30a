package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNewArchitecturesRefuseBadDirectories: an OPT, Ministral-3 or ViT
// model directory from a stranger with an absurd or inconsistent config,
// a tensor of another dtype, or an index naming a file outside the
// directory is an error naming the file and the key, before any large
// allocation: a config of thousands of layers over a 3-layer checkpoint
// stops at the first missing tensor (the ViT's 65536 made 441 MB of empty
// layers first).
func TestNewArchitecturesRefuseBadDirectories(t *testing.T) {
	const opt, vit = "testdata/opt/opt-tiny", vitTinyDir
	cases := []struct {
		name, fixture string
		keys          map[string]any // set in config.json (a Ministral-3's text_config); nil deletes
		mutate        func(dir string)
		want          []string
	}{
		{"opt hidden_size 1e9", opt, map[string]any{"hidden_size": 1e9}, nil, []string{"config.json", `"hidden_size"`}},
		{"opt num_hidden_layers 1e6", opt, map[string]any{"num_hidden_layers": 1e6}, nil, []string{"config.json", `"num_hidden_layers"`}},
		{"opt vocab_size 0", opt, map[string]any{"vocab_size": 0}, nil, []string{"config.json", `"vocab_size"`}},
		{"opt eos_token_id past the vocabulary", opt, map[string]any{"eos_token_id": []any{2, 1e6}}, nil,
			[]string{"config.json", `"eos_token_id" 1000000 is not a token id`}},
		// A stranger's string of megabytes is quoted in part, with its length.
		{"opt architecture of 1 MiB", opt, map[string]any{"architectures": []string{strings.Repeat("A", 1<<20)}}, nil,
			[]string{"config.json", `unsupported architecture "AAAA`, `A"… (1048576 bytes)`}},
		{"opt 100000 architectures", opt, map[string]any{"architectures": make([]string, 100000)}, nil,
			[]string{"config.json", `"architectures" must name exactly one class, got ["" "" "" … (99997 more)]`}},
		{"opt activation of 1 MiB", opt, map[string]any{"activation_function": strings.Repeat("r", 1<<20)}, nil,
			[]string{"config.json", `"activation_function" "rrrr`, `r"… (1048576 bytes)`}},
		{"vit hidden_act of 1 MiB", vit, map[string]any{"hidden_act": strings.Repeat("g", 1<<20)}, nil,
			[]string{"config.json", `hidden_act "gggg`, `g"… (1048576 bytes)`}},
		{"ministral rope_type of 1 MiB", ministralDir, map[string]any{"rope_parameters": map[string]any{"rope_theta": 1e6,
			"llama_4_scaling_beta": 0.1, "original_max_position_embeddings": 16384, "rope_type": strings.Repeat("y", 1<<20)}}, nil,
			[]string{"config.json", `rope_type "yyyy`, `y"… (1048576 bytes)`}},
		{"ministral sliding_window of 1 MiB", ministralDir, map[string]any{"sliding_window": strings.Repeat("w", 1<<20)}, nil,
			[]string{"config.json", `"sliding_window" "wwww`, `w… (1048578 bytes) is not supported`}},
		{"opt heads do not divide", opt, map[string]any{"num_attention_heads": 5}, nil, []string{"config.json", `"num_attention_heads" 5`}},
		{"opt 4096 layers", opt, map[string]any{"num_hidden_layers": 4096}, nil, []string{`missing tensor "model.decoder.layers.3.`}},
		{"ministral hidden_size 1e9", ministralDir, map[string]any{"hidden_size": 1e9}, nil, []string{"config.json", "text_config", `"hidden_size"`}},
		{"ministral head_dim odd", ministralDir, map[string]any{"head_dim": 3}, nil, []string{"config.json", `"head_dim"`}},
		{"ministral max_position_embeddings -5", ministralDir, map[string]any{"max_position_embeddings": -5}, nil,
			[]string{"config.json", `"max_position_embeddings"`, "-5"}},
		{"ministral 4096 layers", ministralDir, map[string]any{"num_hidden_layers": 4096}, nil, []string{`missing tensor "model.language_model.layers.3.`}},
		{"vit hidden_size 1e9", vit, map[string]any{"hidden_size": 1e9}, nil, []string{"config.json", "hidden_size"}},
		{"vit patch_size over image_size", vit, map[string]any{"patch_size": 128}, nil, []string{"config.json", "patch_size 128"}},
		{"vit image_size not a multiple", vit, map[string]any{"image_size": 70}, nil, []string{"config.json", "image_size 70"}},
		{"vit 65536 layers", vit, map[string]any{"num_hidden_layers": 65536}, nil, []string{`missing tensor "vit.encoder.layer.3.`}},
		{"tensor of another dtype", opt, nil, func(dir string) { editHeader(t, dir, `"dtype":"F32"`, `"dtype":"I32"`) },
			[]string{"model.safetensors", "dtype I32"}},
		{"index outside the directory", opt, nil, func(dir string) {
			os.Rename(filepath.Join(dir, "model.safetensors"), filepath.Join(filepath.Dir(dir), "x.safetensors"))
			os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map":{"model.decoder.embed_tokens.weight":"../x.safetensors"}}`), 0o644)
		}, []string{"model.safetensors.index.json", `"../x.safetensors" is not a file inside`}},
		{"index naming a missing shard", opt, nil, func(dir string) {
			os.Remove(filepath.Join(dir, "model.safetensors"))
			os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map":{"model.decoder.embed_tokens.weight":"model-00001-of-00002.safetensors"}}`), 0o644)
		}, []string{"model.safetensors.index.json", "model-00001-of-00002.safetensors", "no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			os.Mkdir(dir, 0o755)
			for _, f := range []string{"config.json", "model.safetensors"} {
				b, err := os.ReadFile(filepath.Join(tc.fixture, f))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			setConfigKeys(t, dir, tc.keys)
			if tc.mutate != nil {
				tc.mutate(dir)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			var err error
			if tc.fixture == vit {
				_, err = LoadViTWith(dir, ViTLoadOptions{NumLabels: 37})
			} else {
				_, err = Load(dir)
			}
			runtime.ReadMemStats(&ms)
			if err != nil && len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes, beginning %.300q", len(err.Error()), err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v; want one containing %q", err, w)
				}
			}
			if mb := float64(ms.TotalAlloc-before) / (1 << 20); mb > 32 {
				t.Errorf("%.0f MiB allocated before the error", mb)
			}
		})
	}
}

// setConfigKeys sets keys in dir's config.json (in its text_config, if it
// has one); a nil value deletes the key.
func setConfigKeys(t *testing.T, dir string, keys map[string]any) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	target := cfg
	if text, ok := cfg["text_config"].(map[string]any); ok {
		target = text
	}
	for k, v := range keys {
		if v == nil {
			delete(target, k)
		} else {
			target[k] = v
		}
	}
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, b, 0o644)
}

// editHeader replaces old by new (of the same length) in the header of
// dir's model.safetensors.
func editHeader(t *testing.T, dir, old, new string) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24
	i := strings.Index(string(b[8:8+n]), old)
	if i < 0 || len(old) != len(new) {
		t.Fatalf("cannot replace %q in the header", old)
	}
	copy(b[8+i:], new)
	os.WriteFile(p, b, 0o644)
}

// TestCheckAllReadQuotesLongNames: the tensors a checkpoint holds beyond the
// config's are named, a name of megabytes in part.
func TestCheckAllReadQuotesLongNames(t *testing.T) {
	err := checkAllRead([]string{"a.weight", strings.Repeat("x", 1<<20)}, &Config{NumLayers: 2, Architecture: "LlamaForCausalLM"})
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), `(a.weight, "xxxx`) || !strings.Contains(err.Error(), `x"… (1048576 bytes))`) {
		t.Fatalf("error %.300q (%d bytes), want the long name quoted in part", err, len(fmt.Sprint(err)))
	}
}
