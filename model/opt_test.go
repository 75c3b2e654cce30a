package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/safetensors"
)

// The committed OPT fixtures (scripts/make_opt_fixtures.py): opt-tiny has
// OPT-1.3B's shape, opt-tiny-postnorm OPT-350m's. model/modeltest checks
// them against their HF references on every backend; these tests check what
// is OPT's own on the CPU.
var optFixtures = []string{"opt-tiny", "opt-tiny-postnorm"}

func optFixture(t *testing.T, name string) (*Model, *fixture.Ref, string) {
	t.Helper()
	dir := filepath.Join("testdata", "opt", name)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m, fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors")), dir
}

// tinyOPTConfig is a small OPT config: OPT-1.3B's shape, or with postNorm
// OPT-350m's (LayerNorm after the residual adds, no final norm, narrower
// embeddings with project_in/out).
func tinyOPTConfig(postNorm bool) *Config {
	c := &Config{Architecture: "OPTForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 40, WordEmbedDim: 32, LayerNormEps: 1e-5,
		TieEmbeddings: true, BOSTokenID: 2, EOSTokenIDs: []int{2}}
	if postNorm {
		c.PostNorm, c.NoFinalNorm, c.WordEmbedDim = true, true, 16
	}
	return c
}

// TestOPTConfig reads the fixtures' config.json as OPTConfig does and
// refuses what the model does not compute, naming the key.
func TestOPTConfig(t *testing.T) {
	c, err := LoadConfig(filepath.Join("testdata", "opt", "opt-tiny-postnorm", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Architecture: "OPTForCausalLM", VocabSize: 512, HiddenSize: 64, IntermediateSize: 128, NumLayers: 3,
		NumHeads: 4, NumKVHeads: 4, HeadDim: 16, MaxPositions: 64, WordEmbedDim: 32, PostNorm: true, NoFinalNorm: true,
		LayerNormEps: 1e-5, TieEmbeddings: true, BOSTokenID: 2, EOSTokenIDs: []int{2}, TorchDtype: "float32"}
	if fmt.Sprintf("%+v", *c) != fmt.Sprintf("%+v", want) {
		t.Errorf("config\n%+v\nwant\n%+v", *c, want)
	}
	const base = `{"architectures":["OPTForCausalLM"],"vocab_size":8,"hidden_size":8,"ffn_dim":16,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8%s}`
	d, err := ParseConfig([]byte(fmt.Sprintf(base, "")))
	if err != nil {
		t.Fatal(err)
	}
	if d.PostNorm || d.NoFinalNorm || d.WordEmbedDim != 8 || !d.TieEmbeddings || d.BOSTokenID != 2 || !slices.Equal(d.EOSTokenIDs, []int{2}) {
		t.Errorf("OPTConfig's defaults: %+v", *d)
	}
	if d, err := ParseConfig([]byte(fmt.Sprintf(base, `,"_remove_final_layer_norm":true`))); err != nil || !d.NoFinalNorm || d.PostNorm {
		t.Errorf("_remove_final_layer_norm: %+v, %v", d, err)
	}
	for extra, wantErr := range map[string]string{
		`,"activation_function":"gelu"`:                     `"activation_function"`,
		`,"enable_bias":false`:                              `"enable_bias"`,
		`,"layer_norm_elementwise_affine":false`:            `"layer_norm_elementwise_affine"`,
		`,"word_embed_proj_dim":0`:                          `"word_embed_proj_dim"`,
		`,"num_attention_heads":3`:                          `"num_attention_heads"`,
		`,"quantization_config":{"bits":4}`:                 `"quantization_config"`,
		`,"max_position_embeddings":0`:                      `"max_position_embeddings"`,
		`,"eos_token_id":"</s>"`:                            `"eos_token_id"`,
		`,"architectures":["OPTForSequenceClassification"]`: `OPTForSequenceClassification`,
	} {
		if _, err := ParseConfig([]byte(fmt.Sprintf(base, extra))); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want one naming %s", extra, err, wantErr)
		}
	}
	if _, err := ParseConfig([]byte(strings.Replace(fmt.Sprintf(base, ""), `"ffn_dim":16,`, "", 1))); err == nil || !strings.Contains(err.Error(), `"ffn_dim"`) {
		t.Errorf("no ffn_dim: %v", err)
	}
}

// TestOPTDefaultPositions: without position_ids OPT derives the positions
// from the mask (cumsum(mask)·mask − 1), so a left-padded batch gives the
// logits HF gives it (and its real rows those of the right-padded batch).
func TestOPTDefaultPositions(t *testing.T) {
	for _, name := range optFixtures {
		t.Run(name, func(t *testing.T) {
			m, ref, _ := optFixture(t, name)
			mask := ref.Ints("left_attention_mask")
			out, err := m.Forward(Input{B: 4, T: len(mask) / 4, Tokens: ref.Ints("left_input_ids"), Mask: mask}, Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, "left-padded logits, default positions", out.Logits, ref.F64("default_left_logits_f64"), m.VocabSize, realRows(mask), logitsTol)
		})
	}
}

// TestOPTPositionLimit: a sequence past the learned positions is an error
// that says so, in Forward, Losses and Generate; one that fits runs.
func TestOPTPositionLimit(t *testing.T) {
	m, err := NewRandom(tinyOPTConfig(false), 3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	long := Input{B: 1, T: 41, Tokens: make([]int, 41)}
	labels := make([]int, 41)
	labels[40] = 5
	if _, err := m.Forward(long, Options{Labels: labels}); err == nil || !strings.Contains(err.Error(), "past the model's 40 learned positions") {
		t.Errorf("Forward of 41 tokens: %v", err)
	}
	if _, _, err := m.Losses(long, labels, Variant{}, []Variant{{}}); err == nil || !strings.Contains(err.Error(), "max_position_embeddings") {
		t.Errorf("Losses of 41 tokens: %v", err)
	}
	fits := Input{B: 1, T: 40, Tokens: make([]int, 40)}
	if _, err := m.Forward(fits, Options{Logits: true}); err != nil {
		t.Errorf("Forward of 40 tokens: %v", err)
	}
	if _, err := m.Generate(Input{B: 1, T: 38, Tokens: make([]int, 38)}, GenerateOptions{MaxNewTokens: 3, StopIDs: []int{}}); err != nil {
		t.Errorf("38 + 3 new tokens (the last fed back at position 39): %v", err)
	}
	if _, err := m.Generate(Input{B: 1, T: 38, Tokens: make([]int, 38)}, GenerateOptions{MaxNewTokens: 4, StopIDs: []int{}}); err == nil || !strings.Contains(err.Error(), "position 40") {
		t.Errorf("38 + 4 new tokens: %v", err)
	}
}

// TestBaseModelNames: a checkpoint saved from the base model (OPTModel,
// Qwen2Model: names without "model.", as from_pretrained accepts them, and
// the base class in config.json's "architectures", which
// AutoModelForCausalLM ignores, as it ignores a missing one: it picks the
// class by model_type) loads to the same model; as from_pretrained, an
// untied model's without its lm_head.weight (from_pretrained makes one up)
// or one that keeps an lm_head.weight (from_pretrained: "corrupted") is
// refused.
func TestBaseModelNames(t *testing.T) {
	untied := "testdata/qwen2/qwen2-tiny-untied"
	for head, want := range map[bool]string{false: "without the lm_head.weight that the untied", true: "holds lm_head.weight, which no base model has"} {
		if _, err := Load(withoutModelPrefix(t, untied, head)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s without the model. prefix (its lm_head.weight kept: %v): %v, want an error with %q", untied, head, err, want)
		}
	}
	for _, dir := range []string{"testdata/opt/opt-tiny", "testdata/qwen2/qwen2-tiny"} {
		m, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		base := map[string]string{"testdata/opt/opt-tiny": "OPTModel", "testdata/qwen2/qwen2-tiny": "Qwen2Model"}[dir]
		for _, keys := range []map[string]any{{}, {"architectures": []string{base}}, {"architectures": nil}} {
			bdir := withoutModelPrefix(t, dir, false)
			setConfigKeys(t, bdir, keys)
			mb, err := Load(bdir)
			if err != nil {
				t.Errorf("%s without the model. prefix, config %v: %v", dir, keys, err)
				continue
			}
			if mb.Architecture != m.Architecture {
				t.Errorf("%s without the model. prefix, config %v: architecture %s, want %s", dir, keys, mb.Architecture, m.Architecture)
			}
			in := Input{B: 1, T: 5, Tokens: []int{1, 7, 3, 12, 5}}
			a, _ := m.Forward(in, Options{Logits: true})
			b, err := mb.Forward(in, Options{Logits: true})
			if err != nil || !slices.Equal(a.Logits, b.Logits) {
				t.Errorf("%s: the checkpoint without the model. prefix, config %v, gives other logits (%v)", dir, keys, err)
			}
		}
		mb, err := Load(withoutModelPrefix(t, dir, false))
		if err != nil {
			t.Fatal(err)
		}
		names := func(m *Model) []string {
			ts, _ := m.Tensors()
			var n []string
			for _, t := range ts {
				n = append(n, t.Name)
			}
			return n
		}
		if !slices.Equal(names(m), names(mb)) {
			t.Errorf("%s: Tensors names differ: %v vs %v", dir, names(mb), names(m))
		}
	}
}

// withoutModelPrefix copies dir's config.json and its model.safetensors
// with each tensor's "model." prefix cut, as a base model saves it, and
// without lm_head.weight but with head.
func withoutModelPrefix(t *testing.T, dir string, head bool) string {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tensors []safetensors.Tensor
	for _, info := range f.Tensors() {
		if info.Name == "lm_head.weight" && !head {
			continue
		}
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, safetensors.F32Tensor(strings.TrimPrefix(info.Name, "model."), info.Shape, v))
	}
	base := t.TempDir()
	if err := safetensors.WriteFile(filepath.Join(base, "model.safetensors"), tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}

// TestOPTTensorsOrder: Tensors lists OPTForCausalLM's named_parameters in
// order (as transformers lists them for these configs), and the ids the
// forward pass reads its tensors by agree with it.
func TestOPTTensorsOrder(t *testing.T) {
	for _, post := range []bool{false, true} {
		c := tinyOPTConfig(post)
		c.TieEmbeddings = post // an untied head too
		m, err := NewRandom(c, 3, 0.3)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := m.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		const p = "model.decoder."
		want := []string{p + "embed_tokens.weight", p + "embed_positions.weight"}
		if post {
			want = append(want, p+"project_out.weight", p+"project_in.weight")
		} else {
			want = append(want, p+"final_layer_norm.weight", p+"final_layer_norm.bias")
		}
		for l := range c.NumLayers {
			for _, mod := range []string{"self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj", "self_attn.out_proj",
				"self_attn_layer_norm", "fc1", "fc2", "final_layer_norm"} {
				want = append(want, fmt.Sprintf(p+"layers.%d.%s.weight", l, mod), fmt.Sprintf(p+"layers.%d.%s.bias", l, mod))
			}
		}
		if !c.TieEmbeddings {
			want = append(want, "lm_head.weight")
		}
		var names []string
		for _, tt := range ts {
			names = append(names, tt.Name)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("post-norm %v: Tensors lists\n%v\nwant\n%v", post, names, want)
		}
		ids := m.optIDs()
		for id, name := range map[int]string{ids.positions: "embed_positions.weight", ids.projectIn: "project_in.weight",
			ids.projectOut: "project_out.weight", ids.norm: "decoder.final_layer_norm.weight", ids.normBias: "decoder.final_layer_norm.bias"} {
			if id >= 0 && !strings.HasSuffix(ts[id].Name, name) {
				t.Errorf("id %d is %s, want …%s", id, ts[id].Name, name)
			}
		}
		if h := ts[m.headID()].Name; h != map[bool]string{true: p + "embed_tokens.weight", false: "lm_head.weight"}[c.TieEmbeddings] {
			t.Errorf("headID names %s", h)
		}
		for l := range c.NumLayers {
			li := m.optLayerIDs(l)
			for id, name := range map[int]string{li.k: "k_proj.weight", li.vBias: "v_proj.bias", li.q: "q_proj.weight", li.oBias: "out_proj.bias",
				li.attnNorm: "self_attn_layer_norm.weight", li.up: "fc1.weight", li.downBias: "fc2.bias", li.mlpNormBias: "final_layer_norm.bias"} {
				if n := ts[id].Name; n != fmt.Sprintf(p+"layers.%d.", l)+map[bool]string{true: "self_attn.", false: ""}[strings.Contains(name, "proj")]+name {
					t.Errorf("layer %d: id %d is %s, want …%s", l, id, n, name)
				}
			}
		}
	}
}

// TestOPTPerturbedWeights is TestPerturbedWeights for OPT: every tensor
// (positions, biases, LayerNorms, project_in/out) read as a variant
// perturbs it gives, bit for bit, the loss of a model built from the
// perturbed values.
func TestOPTPerturbedWeights(t *testing.T) {
	for _, post := range []bool{false, true} {
		for _, tied := range []bool{true, false} {
			c := tinyOPTConfig(post)
			c.TieEmbeddings = tied
			t.Run(fmt.Sprintf("postnorm=%v/tied=%v", post, tied), func(t *testing.T) { perturbedWeights(t, c) })
		}
	}
}

// TestOPTSaveRoundTrip: Save writes an OPT model that loads back to the same
// logits, under HF's names.
func TestOPTSaveRoundTrip(t *testing.T) {
	for _, name := range optFixtures {
		m, ref, dir := optFixture(t, name)
		checkSaveRoundTrip(t, name, m, dir, ref.Ints("gen1_prompt"))
	}
}

// checkSaveRoundTrip saves m (loaded from dir) and loads it back: the
// logits of prompt must be the same bits.
func checkSaveRoundTrip(t *testing.T, name string, m *Model, dir string, prompt []int) {
	t.Helper()
	out := t.TempDir()
	if err := m.Save(out, SaveOptions{Source: dir}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{B: 1, T: len(prompt), Tokens: prompt}
	a, _ := m.Forward(in, Options{Logits: true})
	b, err := back.Forward(in, Options{Logits: true})
	if err != nil || !slices.Equal(a.Logits, b.Logits) {
		t.Errorf("%s: saved and reloaded, other logits (%v)", name, err)
	}
}
