package model

import (
	"math"
	"path/filepath"
	"reflect"
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
// gives it): a wrong width, depth or tie shows as a wrong count.
func TestPublishedSizes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		total, nonEmbed float64 // billions, as the card rounds them; 0: not stated
	}{
		{"Qwen3-0.6B", 0.6, 0.44},
		{"Llama-3.2-1B", 1.23, 0},
		{"Qwen3-8B", 8.2, 6.95},
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
		if !near(total, tc.total) {
			t.Errorf("%s: %.3fB parameters, the model card says %gB", tc.name, total/1e9, tc.total)
		}
		if tc.nonEmbed > 0 && !near(nonEmbed, tc.nonEmbed) {
			t.Errorf("%s: %.3fB parameters without the embeddings, the model card says %gB", tc.name, nonEmbed/1e9, tc.nonEmbed)
		}
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
	for _, name := range []string{"", "Qwen3", "models/my-model", "gpt2"} {
		if p, ok := LookupPublished(name); ok {
			t.Errorf("LookupPublished(%q) found %s", name, p.Repo)
		}
	}
}

// TestParamsCountsTheCheckpoint: Params is the number of values a random
// model's checkpoint holds, tied or not, with QK-norm or without.
func TestParamsCountsTheCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		arch string
		tied bool
	}{{"Qwen3ForCausalLM", true}, {"Qwen3ForCausalLM", false}, {"LlamaForCausalLM", true}, {"LlamaForCausalLM", false}} {
		c := &Config{Architecture: tc.arch, VocabSize: 64, HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
			NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4, TieEmbeddings: tc.tied, QKNorm: tc.arch == "Qwen3ForCausalLM",
			BOSTokenID: -1}
		dir := t.TempDir()
		if _, err := WriteRandom(dir, c, 1, 0.02); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, ti := range f.Tensors() {
			k := int64(1)
			for _, s := range ti.Shape {
				k *= int64(s)
			}
			n += k
		}
		f.Close()
		if total, _ := c.Params(); total != n {
			t.Errorf("%s tied=%v: Params %d, the checkpoint holds %d values", tc.arch, tc.tied, total, n)
		}
	}
}
