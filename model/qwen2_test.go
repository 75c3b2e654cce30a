package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// The committed fixtures of the Llama-like layers with projection biases
// (scripts/make_qwen2_fixtures.py, testdata/qwen2/manifest.json): Qwen2 with
// a tied head and untied with a sliding window, Llama with attention_bias
// and mlp_bias, Qwen3 with attention_bias, and Mistral (no biases; a
// sliding window and a head width of its own). model/modeltest checks them
// against their HF references on every backend; these tests check what is
// read from their configs and how their tensors are listed.
var biasFixtures = []string{"qwen2-tiny", "qwen2-tiny-untied", "llama-bias-tiny", "qwen3-bias-tiny", "mistral-tiny"}

// biasManifest is the part of testdata/qwen2/manifest.json these tests read.
type biasManifest struct {
	Models map[string]struct {
		NamedParameters []string `json:"named_parameters"`
	} `json:"models"`
}

func readBiasManifest(t *testing.T) biasManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "qwen2", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m biasManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBiasFixturesConfig: the fixtures' config.json (save_pretrained's)
// are read as the HF classes build the models: which projections have a
// bias, Qwen3's q/k norms, the heads' tying, and the sliding window.
func TestBiasFixturesConfig(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		qkv, o, mlp, qkNorm, tie bool
		window                   int
	}{
		{"qwen2-tiny", true, false, false, false, true, 64},
		{"qwen2-tiny-untied", true, false, false, false, false, 6},
		{"llama-bias-tiny", true, true, true, false, false, 0},
		{"qwen3-bias-tiny", true, true, false, true, true, 0},
		{"mistral-tiny", false, false, false, false, false, 5},
	} {
		c, err := LoadConfig(filepath.Join("testdata", "qwen2", tc.name, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		got := []any{c.QKVBias, c.OBias, c.MLPBias, c.QKNorm, c.TieEmbeddings, c.SlidingWindow}
		if want := []any{tc.qkv, tc.o, tc.mlp, tc.qkNorm, tc.tie, tc.window}; !slices.Equal(got, want) {
			t.Errorf("%s: q/k/v bias, o bias, MLP bias, q/k norm, tied, window = %v, want %v", tc.name, got, want)
		}
	}
}

// TestBiasFixturesTensors: Tensors lists each fixture's tensors in the
// order transformers' named_parameters gives them (the manifest's list),
// which full-parameter training lays the noise out by, and layerIDs agree.
func TestBiasFixturesTensors(t *testing.T) {
	manifest := readBiasManifest(t)
	for _, name := range biasFixtures {
		m, err := LoadWith(filepath.Join("testdata", "qwen2", name), LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := m.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tt := range ts {
			names = append(names, tt.Name)
		}
		want := manifest.Models[name].NamedParameters
		if len(want) == 0 || !slices.Equal(names, want) {
			t.Errorf("%s: Tensors lists\n%v\ntransformers' named_parameters\n%v", name, names, want)
		}
		for l := range m.NumLayers {
			checkLayerIDs(t, name, m, ts, l)
		}
	}
}

// TestBiasFixturesSaveRoundTrip: Save writes a model with biases that loads
// back to the same logits, under HF's names.
func TestBiasFixturesSaveRoundTrip(t *testing.T) {
	for _, name := range biasFixtures {
		dir := filepath.Join("testdata", "qwen2", name)
		m, err := LoadWith(dir, LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
		checkSaveRoundTrip(t, name, m, dir, ref.Ints("gen1_prompt"))
	}
}

// TestBiasConfigKeys reads the keys that give a Llama-like layer its
// biases as the HF classes of transformers 4.51 do: Qwen2 has q/k/v biases
// whatever attention_bias says (Qwen2Config has no such key), Llama's
// attention_bias and mlp_bias and Qwen3's attention_bias add theirs, and
// Qwen3MLP has no bias whatever mlp_bias says.
func TestBiasConfigKeys(t *testing.T) {
	base := `{"architectures":["%s"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2%s}`
	for _, tc := range []struct {
		arch, extra string
		qkv, o, mlp bool
	}{
		{"Qwen2ForCausalLM", "", true, false, false},
		{"Qwen2ForCausalLM", `,"attention_bias":false`, true, false, false},
		{"Qwen2ForCausalLM", `,"attention_bias":true,"mlp_bias":true`, true, false, false},
		{"LlamaForCausalLM", "", false, false, false},
		{"LlamaForCausalLM", `,"attention_bias":true`, true, true, false},
		{"LlamaForCausalLM", `,"mlp_bias":true`, false, false, true},
		{"LlamaForCausalLM", `,"attention_bias":true,"mlp_bias":true`, true, true, true},
		{"Qwen3ForCausalLM", `,"attention_bias":true`, true, true, false},
		{"Qwen3ForCausalLM", `,"mlp_bias":true`, false, false, false},
		{"MistralForCausalLM", `,"num_key_value_heads":2,"attention_bias":true,"mlp_bias":true`, false, false, false}, // MistralConfig has neither key
	} {
		c, err := ParseConfig([]byte(fmt.Sprintf(base, tc.arch, tc.extra)))
		if err != nil {
			t.Fatalf("%s%s: %v", tc.arch, tc.extra, err)
		}
		if got, want := []bool{c.QKVBias, c.OBias, c.MLPBias}, []bool{tc.qkv, tc.o, tc.mlp}; !slices.Equal(got, want) {
			t.Errorf("%s%s: q/k/v, o, MLP biases %v, want %v", tc.arch, tc.extra, got, want)
		}
	}
}

// TestQwen2SlidingWindow reads Qwen2's sliding window as transformers
// 4.51's eager attention applies it (every layer, whenever the key is not
// null; 4096 when it is absent), and refuses by name what it would apply
// otherwise: use_sliding_window true (flash attention's per-layer window
// from max_window_layers on), a window that is not positive.
func TestQwen2SlidingWindow(t *testing.T) {
	base := `{"architectures":["%s"],"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":2,"num_attention_heads":2%s}`
	for _, tc := range []struct {
		arch, extra string
		want        int
		err         string
	}{
		{"Qwen2ForCausalLM", "", 4096, ""},
		{"Qwen2ForCausalLM", `,"sliding_window":null`, 0, ""},
		// Qwen2.5-0.5B-Instruct's: a window as long as the positions.
		{"Qwen2ForCausalLM", `,"use_sliding_window":false,"sliding_window":32768,"max_window_layers":21`, 32768, ""},
		{"Qwen2ForCausalLM", `,"use_sliding_window":false,"sliding_window":8`, 8, ""},
		{"Qwen2ForCausalLM", `,"use_sliding_window":true,"sliding_window":null`, 0, ""},
		{"Qwen2ForCausalLM", `,"use_sliding_window":true,"sliding_window":4096,"max_window_layers":1`, 0,
			`"use_sliding_window" true is not supported: transformers windows the layers from "max_window_layers" on (max_window_layers 1)`},
		{"Qwen2ForCausalLM", `,"use_sliding_window":true`, 0, `"use_sliding_window" true is not supported`},
		{"Qwen2ForCausalLM", `,"sliding_window":0`, 0, `"sliding_window" must be positive or null, got 0`},
		{"Qwen3ForCausalLM", `,"sliding_window":-4`, 0, `"sliding_window" must be positive or null, got -4`},
		{"Qwen3ForCausalLM", `,"use_sliding_window":true,"sliding_window":128`, 0, `"use_sliding_window" true is not supported`},
		{"LlamaForCausalLM", `,"sliding_window":8,"use_sliding_window":true`, 0, ""},                                 // LlamaConfig has neither key
		{"MistralForCausalLM", `,"num_key_value_heads":2`, 4096, ""},                                                 // MistralConfig's default
		{"MistralForCausalLM", `,"num_key_value_heads":2,"sliding_window":null`, 0, ""},                              // Mistral-7B v0.2's, v0.3's
		{"MistralForCausalLM", `,"num_key_value_heads":2,"sliding_window":16,"use_sliding_window":true`, 16, ""},     // not a Mistral key
		{"MistralForCausalLM", "", 0, `"num_key_value_heads" 8 must be positive and divide "num_attention_heads" 2`}, // MistralConfig's default 8
	} {
		c, err := ParseConfig([]byte(fmt.Sprintf(base, tc.arch, tc.extra)))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s%s: error %v, want one saying %q", tc.arch, tc.extra, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s%s: %v", tc.arch, tc.extra, err)
		case tc.err == "" && c.SlidingWindow != tc.want:
			t.Errorf("%s%s: window %d, want %d", tc.arch, tc.extra, c.SlidingWindow, tc.want)
		}
	}
}
