package prompttune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
	"github.com/meazo-go/meazo/model"
)

// FuzzLoad: a PEFT prompt-tuning adapter directory from a stranger, its
// adapter_config.json and adapter_model.safetensors both chosen by the
// fuzzer, through Load and, when it loads, a forward pass with the prompt
// attached: an error naming the adapter, never a panic, a hang or
// gigabytes (fuzzguard). The seeds are prompts Save wrote. (Its seeds run
// in every go test; make fuzz fuzzes it.)
func FuzzLoad(f *testing.F) {
	m, err := model.NewRandom(&model.Config{Architecture: "LlamaForCausalLM", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32,
		NumLayers: 1, NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 5e5, TieEmbeddings: true, BOSTokenID: 1}, 1, 0.3)
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range []int{1, 3} {
		p, err := Random(m, n, 2)
		if err != nil {
			f.Fatal(err)
		}
		dir := f.TempDir()
		if err := p.Save(dir, m); err != nil {
			f.Fatal(err)
		}
		cfg, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
		if err != nil {
			f.Fatal(err)
		}
		weights, err := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(cfg, weights)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, cfg, weights []byte) {
		for name, b := range map[string][]byte{"adapter_config.json": cfg, "adapter_model.safetensors": weights} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fuzzguard.Run(func() {
			p, err := Load(dir, m)
			if err != nil {
				if !strings.Contains(err.Error(), dir) {
					t.Fatalf("the error does not name the adapter: %v", err)
				}
				return
			}
			p.Attach(m)
			defer func() { m.Prompt = nil }()
			in := model.Input{B: 1, T: 2, Tokens: []int{0, 1}}
			if _, err := m.Forward(in, model.Options{Labels: []int{-100, 1}}); err != nil {
				t.Fatalf("a prompt that loads does not compute: %v", err)
			}
		})
	})
}
