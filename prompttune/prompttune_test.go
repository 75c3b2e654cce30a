package prompttune

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// fakeTok encodes each byte of the text as its value, with a BOS of 1 when
// special tokens are asked for.
type fakeTok struct{}

func (fakeTok) Encode(text string, addSpecial bool) []int {
	var ids []int
	if addSpecial {
		ids = append(ids, 1)
	}
	for _, b := range []byte(text) {
		ids = append(ids, int(b)%64)
	}
	return ids
}

func tinyModel(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.NewRandom(&model.Config{Architecture: "LlamaForCausalLM", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32,
		NumLayers: 2, NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 5e5, TieEmbeddings: true, BOSTokenID: 1}, 1, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFromText checks PEFT's TEXT init: ids with special tokens, repeated
// then truncated to n, embedding rows copied.
func TestFromText(t *testing.T) {
	m := tinyModel(t)
	p, err := FromText(m, fakeTok{}, 7, "abc")
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{1, 'a' % 64, 'b' % 64, 'c' % 64, 1, 'a' % 64, 'b' % 64} // [BOS a b c] repeated, cut to 7
	row := make([]float32, m.HiddenSize)
	for i, id := range ids {
		m.EmbeddingRow(row, id)
		if !slices.Equal(p.Params()[0][i*m.HiddenSize:(i+1)*m.HiddenSize], row) {
			t.Fatalf("virtual token %d is not the embedding of token %d", i, id)
		}
	}
	if _, err := FromText(m, fakeTok{}, 0, "abc"); err == nil {
		t.Error("n = 0 accepted")
	}
}

func TestTrainableCounts(t *testing.T) {
	for name, want := range map[string]int{"Llama-3.2-1B": 40960, "Qwen3-0.6B": 20480} {
		cfg, err := model.LoadConfig(fixture.Dir(t, "fixtures", "models", "full-configs", name, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Random(&model.Model{Config: *cfg}, 20, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Count(); got != want {
			t.Errorf("%s: %d trainable parameters, want %d", name, got, want)
		}
		for _, n := range []int{0, -1} {
			if _, err := Random(&model.Model{Config: *cfg}, n, 1); err == nil {
				t.Errorf("%d virtual tokens accepted", n)
			}
		}
	}
}

func TestSaveLoadPEFTFormat(t *testing.T) {
	m := tinyModel(t)
	p, err := FromText(m, fakeTok{}, 5, "Classify the sentiment")
	if err != nil {
		t.Fatal(err)
	}
	p.Tokenizer, p.BaseModel = "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"
	dir := t.TempDir()
	if err := p.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ts := f.Tensors(); len(ts) != 1 || ts[0].Name != "prompt_embeddings" || !slices.Equal(ts[0].Shape, []int{5, m.HiddenSize}) {
		t.Errorf("tensors %+v, want one prompt_embeddings [5 %d]", ts, m.HiddenSize)
	}
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"peft_type": "PROMPT_TUNING", "task_type": "CAUSAL_LM", "num_virtual_tokens": 5.0,
		"token_dim": float64(m.HiddenSize), "prompt_tuning_init": "TEXT", "prompt_tuning_init_text": "Classify the sentiment",
		"tokenizer_name_or_path": "Qwen/Qwen3-0.6B"} {
		if cfg[k] != v {
			t.Errorf("adapter_config.json %s = %v, want %v", k, cfg[k], v)
		}
	}
	back, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Params()[0], p.Params()[0]) || back.InitText != p.InitText {
		t.Error("loaded prompt differs from the saved one")
	}
	// Attached, Forward's loss equals the batched-variant loss with the same prompt.
	in := model.Input{B: 1, T: 4, Tokens: []int{3, 9, 27, 17}}
	labels := []int{-100, 9, 27, 17}
	back.Attach(m)
	out, err := m.Forward(in, model.Options{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	m.Prompt = nil
	losses, _, err := m.Losses(in, labels, model.Variant{Prompt: back.Params()[0]}, []model.Variant{{Prompt: back.Params()[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Loss != losses[0] {
		t.Errorf("attached prompt: loss %v; as a variant: %v", out.Loss, losses[0])
	}
	if _, err := Load(t.TempDir(), m); err == nil {
		t.Error("loading an empty directory gave no error")
	}
}

// TestLoadNamesTheTensorAtFault: an adapter whose prompt_embeddings is
// missing or of another shape than its config's is refused, saying which
// (not a dump of the tensor's header record).
func TestLoadNamesTheTensorAtFault(t *testing.T) {
	m := tinyModel(t)
	p, err := FromText(m, fakeTok{}, 5, "Classify the sentiment")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tensor safetensors.Tensor
		want   string
	}{
		{"another shape", safetensors.F32Tensor("prompt_embeddings", []int{6, m.HiddenSize}, make([]float32, 6*m.HiddenSize)),
			`tensor "prompt_embeddings" has shape [6 16], want [5 16] (adapter_config.json's num_virtual_tokens and token_dim)`},
		{"another name", safetensors.F32Tensor("embeddings", []int{5, m.HiddenSize}, make([]float32, 5*m.HiddenSize)),
			`no tensor "prompt_embeddings"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := p.Save(dir, m); err != nil {
				t.Fatal(err)
			}
			if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []safetensors.Tensor{tc.tensor}, nil); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir, m)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Begin:") {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestNarrowEmbeddingsRefused: a model whose embeddings are narrower than
// its hidden size (OPT-350m's shape, projected up) cannot hold hidden-wide
// virtual tokens: making or loading a prompt for it is refused at once,
// naming both widths, not at the first forward of a run.
func TestNarrowEmbeddingsRefused(t *testing.T) {
	m, err := model.NewRandom(&model.Config{Architecture: "OPTForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 40, WordEmbedDim: 16, LayerNormEps: 1e-5, PostNorm: true, NoFinalNorm: true,
		TieEmbeddings: true, BOSTokenID: 2, EOSTokenIDs: []int{2}}, 1, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	want := "word_embed_proj_dim 16, hidden_size 32"
	if _, err := FromText(m, fakeTok{}, 4, "abc"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("FromText: %v, want %q", err, want)
	}
	if _, err := Random(m, 4, 1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Random: %v, want %q", err, want)
	}
	if _, err := Load(t.TempDir(), m); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load: %v, want %q", err, want)
	}
}
