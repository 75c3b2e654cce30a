package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/safetensors"
)

// TestPublishedConfigs holds each built-in config that the shared fixtures
// have a published copy of (fixtures/models/full-configs) to that copy,
// field by field as the model reads them.
func TestPublishedConfigs(t *testing.T) {
	dir := fixture.Dir(t, "fixtures", "models", "full-configs")
	checked := 0
	for _, p := range PublishedModels() {
		want, err := LoadConfig(filepath.Join(dir, p.Name, "config.json"))
		if err != nil {
			continue // no copy of this one (Qwen3-8B): TestPublishedSizes
		}
		got, err := p.Config()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: built-in config %+v\ndiffers from the published one %+v", p.Name, *got, *want)
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("compared %d built-in configs with the fixtures' copies, want Llama-3.2-1B and Qwen3-0.6B", checked)
	}
}

// TestPublishedSizes holds each built-in config to the parameter counts its
// model card states (total, and without the embeddings where the card
// gives it), or to an exact count where one is known: a wrong width,
// depth or tie shows as a wrong count.
func TestPublishedSizes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		total, nonEmbed float64 // billions, as the card rounds them; 0: not stated, or an exact count is known
		exact           int64   // 0: none known
	}{
		{"Qwen3-0.6B", 0.6, 0.44, 0},
		// The card's 0.49B (0.36B without the embeddings); exactly, what
		// transformers 4.51's Qwen2ForCausalLM of this config counts, its
		// LM head tied (init_empty_weights, tie_weights).
		{"Qwen2.5-0.5B-Instruct", 0.49, 0.36, 494_032_768},
		{"Llama-3.2-1B", 1.23, 0, 0},
		{"Qwen3-8B", 8.2, 6.95, 0},
		// transformers 4.51's OPTForCausalLM of this config, its LM head
		// tied: sum(p.numel() for p in model.parameters()) on the meta device.
		{"opt-1.3b", 0, 0, 1_315_758_080},
		// The language model of the checkpoint's tensor listings
		// (lora/ministral_test.go derives the paper's total from it).
		{"Ministral-3-14B-Instruct-2512-BF16", 0, 0, 13_506_073_600},
	} {
		p, ok := LookupPublished(tc.name)
		if !ok {
			t.Fatalf("%s is not built in", tc.name)
		}
		c, err := p.Config()
		if err != nil {
			t.Fatal(err)
		}
		n, ne := c.Params()
		total, nonEmbed := float64(n), float64(ne)
		// Within 1%: the cards round (Llama-3.2-1B's 1.236B is "1.23B"),
		// and a layer more or less is 2.8% of Qwen3-8B, an untied
		// embedding 7.6%.
		near := func(got, want float64) bool { return math.Abs(got/1e9-want) <= 0.01*want }
		if tc.total > 0 && !near(total, tc.total) {
			t.Errorf("%s: %.3fB parameters, the model card says %gB", tc.name, total/1e9, tc.total)
		}
		if tc.nonEmbed > 0 && !near(nonEmbed, tc.nonEmbed) {
			t.Errorf("%s: %.3fB parameters without the embeddings, the model card says %gB", tc.name, nonEmbed/1e9, tc.nonEmbed)
		}
		if tc.exact > 0 && n != tc.exact {
			t.Errorf("%s: %d parameters, want %d", tc.name, n, tc.exact)
		}
	}
}

// TestPublishedMinistral: the built-in Ministral-3 config is the text of
// model/testdata/ministral3's copy, which the Ministral-3 tests read.
func TestPublishedMinistral(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "ministral3", "Ministral-3-14B-Instruct-2512-BF16.config.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := LookupPublished("ministral14b")
	if !ok {
		t.Fatal("ministral14b is not built in")
	}
	if strings.TrimSpace(p.JSON) != strings.TrimSpace(string(want)) {
		t.Errorf("the built-in config of %s differs from testdata's", p.Repo)
	}
	c, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Architecture != "Mistral3ForConditionalGeneration" || !c.Multimodal || c.Yarn == nil {
		t.Errorf("%s: architecture %s, multimodal %v, YaRN %v", p.Repo, c.Architecture, c.Multimodal, c.Yarn)
	}
}

// TestLookupPublished: by name, repository, short name or a download path,
// in any case; an unknown name is not found.
func TestLookupPublished(t *testing.T) {
	for _, name := range []string{"Qwen3-8B", "qwen/qwen3-8b", "qwen3-8b", "models/Qwen3-8B", "/data/models/Qwen3-8B/"} {
		if p, ok := LookupPublished(name); !ok || p.Repo != "Qwen/Qwen3-8B" {
			t.Errorf("LookupPublished(%q) = %+v, %v", name, p.Repo, ok)
		}
	}
	if p, ok := LookupPublished("llama1b"); !ok || !p.Gated {
		t.Errorf("llama1b: %+v %v; want Llama-3.2-1B, gated", p.Repo, ok)
	}
	for name, repo := range map[string]string{
		"opt1.3b": "facebook/opt-1.3b", "facebook/OPT-1.3b": "facebook/opt-1.3b", "models/opt-1.3b": "facebook/opt-1.3b",
		"ministral14b": "mistralai/Ministral-3-14B-Instruct-2512-BF16",
		"models/Ministral-3-14B-Instruct-2512-BF16": "mistralai/Ministral-3-14B-Instruct-2512-BF16",
		// The FP8 repository's names lead to the BF16 one, which loads.
		"mistralai/Ministral-3-14B-Instruct-2512": "mistralai/Ministral-3-14B-Instruct-2512-BF16",
		"Ministral-3-14B-Instruct-2512":           "mistralai/Ministral-3-14B-Instruct-2512-BF16",
	} {
		if p, ok := LookupPublished(name); !ok || p.Repo != repo {
			t.Errorf("LookupPublished(%q) = %q, %v; want %s", name, p.Repo, ok, repo)
		}
	}
	for _, name := range []string{"", "Qwen3", "models/my-model", "gpt2", "opt-125m", "Ministral-3-8B-Instruct-2512"} {
		if p, ok := LookupPublished(name); ok {
			t.Errorf("LookupPublished(%q) found %s", name, p.Repo)
		}
	}
}

// TestREADMEDownloads: the README gives each built-in model's download
// (and conversion) into models/NAME, as a run that misses it prints it.
func TestREADMEDownloads(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range PublishedModels() {
		if want := p.Download("models/" + p.Name); !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not give %s's download:\n%s", p.Repo, want)
		}
	}
}

// TestParamsCountsTheCheckpoint: Params is the number of values a random
// model's checkpoint holds (and without embed_tokens and lm_head, its
// second count), for every family: tied or not, with QK-norm or without,
// OPT pre- and post-norm, with narrower embeddings or without a final
// LayerNorm, and Ministral-3's language model.
func TestParamsCountsTheCheckpoint(t *testing.T) {
	configs := map[string]*Config{}
	for _, tc := range []struct {
		arch string
		tied bool
	}{{"Qwen3ForCausalLM", true}, {"Qwen3ForCausalLM", false}, {"LlamaForCausalLM", true}, {"LlamaForCausalLM", false}} {
		configs[fmt.Sprintf("%s tied=%v", tc.arch, tc.tied)] = &Config{Architecture: tc.arch, VocabSize: 64, HiddenSize: 32,
			IntermediateSize: 48, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4,
			TieEmbeddings: tc.tied, QKNorm: tc.arch == "Qwen3ForCausalLM", BOSTokenID: -1}
	}
	const opt = `{"architectures": ["OPTForCausalLM"], "vocab_size": 64, "hidden_size": 32, "ffn_dim": 48,
		"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 20`
	for name, extra := range map[string]string{
		"OPT pre-norm, tied":                ``,
		"OPT post-norm, narrower, untied":   `, "do_layer_norm_before": false, "word_embed_proj_dim": 16, "tie_word_embeddings": false`,
		"OPT without the final LayerNorm":   `, "_remove_final_layer_norm": true`,
		"OPT pre-norm, narrower embeddings": `, "word_embed_proj_dim": 24`,
	} {
		c, err := ParseConfig([]byte(opt + extra + "}"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		configs[name] = c
	}
	p, _ := LookupPublished("ministral14b")
	mc, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	mc.VocabSize, mc.HiddenSize, mc.IntermediateSize, mc.NumLayers, mc.NumHeads, mc.NumKVHeads, mc.HeadDim = 64, 32, 48, 2, 4, 2, 8
	configs["Ministral-3 (its language model)"] = mc

	for name, c := range configs {
		dir := t.TempDir()
		if err := WriteRandom(dir, c, 1, 0.02); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var n, embed int64
		for _, ti := range f.Tensors() {
			k := int64(1)
			for _, s := range ti.Shape {
				k *= int64(s)
			}
			n += k
			if strings.HasSuffix(ti.Name, "embed_tokens.weight") || ti.Name == "lm_head.weight" {
				embed += k
			}
		}
		f.Close()
		if total, nonEmbed := c.Params(); total != n || nonEmbed != n-embed {
			t.Errorf("%s: Params %d (%d without the embeddings), the checkpoint holds %d values (%d)", name, total, nonEmbed, n, n-embed)
		}
	}
}
