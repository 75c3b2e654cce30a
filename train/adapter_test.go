package train

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
)

// TestOpenAdapter opens saved adapters of each kind through the one reader
// that adapter.init and meazo-eval share, and checks that the model runs
// with them exactly as with the adapter that was saved; a directory that
// holds no adapter is refused with an error that names it.
func TestOpenAdapter(t *testing.T) {
	m, err := model.NewRandom(&model.Config{
		Architecture: "Qwen3ForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
	}, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	root := t.TempDir()

	loraDir := filepath.Join(root, "lora")
	la, err := lora.New(m, lora.Options{R: 4, Alpha: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range la.Params() { // B starts at zero: make the adapter change the output
		for i := range g {
			g[i] += 0.01 * float32(i%7)
		}
	}
	if err := la.Save(loraDir); err != nil {
		t.Fatal(err)
	}
	promptDir := filepath.Join(root, "prompt")
	p, err := prompttune.Random(m, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Save(promptDir, m); err != nil {
		t.Fatal(err)
	}
	nanDir := filepath.Join(root, "nan")
	good := slices.Clone(la.Params()[0])
	la.Params()[0][3] = float32(math.NaN())
	if err := la.Save(nanDir); err != nil {
		t.Fatal(err)
	}
	copy(la.Params()[0], good)
	emptyDir := filepath.Join(root, "empty")
	otherDir := filepath.Join(root, "ia3")
	modelDir := filepath.Join(root, "full-best") // a full-parameter run's best/: a model
	runDir := filepath.Join(root, "run")         // a run directory, its adapters in best/ and last/
	prunedDir := filepath.Join(root, "pruned")   // a run that kept no weights (output.keep_weights: none)
	os.MkdirAll(prunedDir, 0o755)
	os.WriteFile(filepath.Join(prunedDir, "summary.json"), []byte(`{"optimizer": "meazo", "lr": 1e-3, "status": "done", "weights_kept": "none"}`), 0o644)
	for _, d := range []string{emptyDir, otherDir, modelDir, filepath.Join(runDir, "best")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(modelDir, "config.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(otherDir, "adapter_config.json"), []byte(`{"peft_type": "IA3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	longDir := filepath.Join(root, "long") // a peft_type of 1 MiB: quoted in part
	os.MkdirAll(longDir, 0o755)
	if err := os.WriteFile(filepath.Join(longDir, "adapter_config.json"), []byte(`{"peft_type": "`+strings.Repeat("P", 1<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	in := model.Input{B: 1, T: 5, Tokens: []int{1, 7, 9, 2, 5}}
	labels := []int{-100, 7, 9, 2, 5}
	loss := func(m *model.Model) float64 {
		out, err := m.Forward(in, model.Options{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return out.Loss
	}
	base := loss(m)
	la.Attach(m)
	withLoRA := loss(m)
	m.Adapter = nil
	p.Attach(m)
	withPrompt := loss(m)
	m.Prompt = nil

	for _, tc := range []struct {
		name, dir string
		want      float64 // the loss with the saved adapter
		err       string  // what the error must say besides the directory
	}{
		{"lora", loraDir, withLoRA, ""},
		{"prompt", promptDir, withPrompt, ""},
		{"no adapter_config.json", emptyDir, 0, "no adapter_config.json"},
		{"no such directory", filepath.Join(root, "gone"), 0, "no such directory"},
		{"a model directory", modelDir, 0, "load it as the model (--model, model.path), not as an adapter"},
		{"a run directory", runDir, 0, "a run directory, not an adapter: a LoRA or prompt-tuning run's adapters are " +
			filepath.Join(runDir, "best") + " and " + filepath.Join(runDir, "last")},
		{"a run that kept no weights", prunedDir, 0, "a run directory, not an adapter: a LoRA or prompt-tuning run's adapters are its best/ and last/, " +
			"and this one kept neither (output.keep_weights: none)"},
		{"other peft_type", otherDir, 0, `peft_type "IA3"`},
		{"a peft_type of 1 MiB", longDir, 0, `peft_type "PPPP`},
		{"NaN in the adapter", nanDir, 0, "parameter group 0 holds NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := openAdapter(tc.dir, m, false)
			if tc.err != "" {
				if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), tc.dir) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %.300v, want one naming %s and saying %q", err, tc.dir, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got float64
			if err := withAdapter(m, a, a.Params(), false, func(m *model.Model) error { got = loss(m); return nil }); err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got == base {
				t.Errorf("loss with the opened adapter %.17g, with the saved one %.17g (base model %.17g)", got, tc.want, base)
			}
			if m.Adapter != nil || m.Prompt != nil {
				t.Error("the adapter is still attached after withAdapter")
			}
		})
	}
}
