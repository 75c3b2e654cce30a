package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// TestTensorsOrder: Tensors lists HF's named_parameters in order (each
// Linear's weight before its bias), with the shapes the config gives, and
// layerIDs agree with it. The committed fixtures' lists, as transformers
// made them, are TestBiasFixturesTensors'.
func TestTensorsOrder(t *testing.T) {
	configs := biasConfigs()
	for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM"} {
		configs[arch] = tinyConfig(arch)
	}
	for name, c := range configs {
		m, err := NewRandomWith(c, 3, 0.3, LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := m.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(ts))
		for i, tt := range ts {
			names[i] = tt.Name
		}
		if want := wantTensorNames(c); !slices.Equal(names, want) {
			t.Fatalf("%s: Tensors lists\n%v\nwant\n%v", name, names, want)
		}
		for l := range c.NumLayers {
			checkLayerIDs(t, name, m, ts, l)
		}
		if ts[m.normID()].Name != "model.norm.weight" || ts[m.headID()].Name != map[bool]string{true: "model.embed_tokens.weight", false: "lm_head.weight"}[c.TieEmbeddings] {
			t.Errorf("%s: normID %d, headID %d", name, m.normID(), m.headID())
		}
	}
}

// wantTensorNames is a Llama-like model's named_parameters as the HF
// classes register them.
func wantTensorNames(c *Config) []string {
	want := []string{"model.embed_tokens.weight"}
	linear := func(p string, bias bool) []string {
		if bias {
			return []string{p + ".weight", p + ".bias"}
		}
		return []string{p + ".weight"}
	}
	for l := range c.NumLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, proj := range []string{"q_proj", "k_proj", "v_proj"} {
			want = append(want, linear(p+"self_attn."+proj, c.QKVBias)...)
		}
		want = append(want, linear(p+"self_attn.o_proj", c.OBias)...)
		if c.QKNorm {
			want = append(want, p+"self_attn.q_norm.weight", p+"self_attn.k_norm.weight")
		}
		for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
			want = append(want, linear(p+"mlp."+proj, c.MLPBias)...)
		}
		want = append(want, p+"input_layernorm.weight", p+"post_attention_layernorm.weight")
	}
	want = append(want, "model.norm.weight")
	if !c.TieEmbeddings {
		want = append(want, "lm_head.weight")
	}
	return want
}

// checkLayerIDs checks that each of layer l's ids names its tensor in ts,
// and that the ids of the tensors the model lacks are −1.
func checkLayerIDs(t *testing.T, what string, m *Model, ts []Tensor, l int) {
	t.Helper()
	ids := m.layerIDs(l)
	for id, suffix := range map[*int]string{
		&ids.q: "self_attn.q_proj.weight", &ids.qBias: "self_attn.q_proj.bias", &ids.k: "self_attn.k_proj.weight",
		&ids.kBias: "self_attn.k_proj.bias", &ids.v: "self_attn.v_proj.weight", &ids.vBias: "self_attn.v_proj.bias",
		&ids.o: "self_attn.o_proj.weight", &ids.oBias: "self_attn.o_proj.bias", &ids.qNorm: "self_attn.q_norm.weight",
		&ids.kNorm: "self_attn.k_norm.weight", &ids.gate: "mlp.gate_proj.weight", &ids.gateBias: "mlp.gate_proj.bias",
		&ids.up: "mlp.up_proj.weight", &ids.upBias: "mlp.up_proj.bias", &ids.down: "mlp.down_proj.weight",
		&ids.downBias: "mlp.down_proj.bias", &ids.attnNorm: "input_layernorm.weight", &ids.mlpNorm: "post_attention_layernorm.weight",
	} {
		name := fmt.Sprintf("model.layers.%d.%s", l, suffix)
		has := slices.ContainsFunc(ts, func(tt Tensor) bool { return tt.Name == name })
		switch {
		case !has && *id != -1:
			t.Errorf("%s: the model has no %s, its id is %d", what, name, *id)
		case has && (*id < 0 || *id >= len(ts) || ts[*id].Name != name):
			t.Errorf("%s: the id of %s is %d", what, name, *id)
		}
	}
}

// TestPerturbedWeights: a variant that perturbs the model's own tensors
// (embeddings, projections, norms, the tied head) gets, bit for bit, the
// loss Forward computes on a model built from the perturbed values on the
// host, whether it runs alone, beside others of other signs and
// directions, or joins the base pass at a later layer (prefix caching).
func TestPerturbedWeights(t *testing.T) {
	for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM"} {
		for _, tied := range []bool{true, false} {
			c := tinyConfig(arch)
			c.TieEmbeddings = tied
			t.Run(fmt.Sprintf("%s/tied=%v", arch, tied), func(t *testing.T) { perturbedWeights(t, c) })
		}
	}
	// Every projection bias (each read as its span perturbs it), one head
	// tied and the others not.
	for name, c := range biasConfigs() {
		c.TieEmbeddings = name == "qwen2"
		t.Run(name, func(t *testing.T) { perturbedWeights(t, c) })
	}
}

func perturbedWeights(t *testing.T, c *Config) {
	be := cpu.New(cpu.Options{Threads: 2})
	load := randomLoader(5, 0.3, false)
	m, err := build(c, be, false, nil, load)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := m.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	in, labels := testBatch(m, rand.New(rand.NewPCG(1, 2)))
	// perturb makes a variant's perturbations: the tensors of layers in
	// [from, to] (−1: the embeddings, NumLayers: the final norm and head)
	// with direction dir's noise, scaled by scale; each tensor's offset is
	// its position in the concatenation of all tensors.
	perturb := func(from, to int, dir uint32, scale float64) []*tensor.Perturbation {
		w := make([]*tensor.Perturbation, len(ts))
		off := int64(0)
		for i, tt := range ts {
			if tt.Layer >= from && tt.Layer <= to {
				w[i] = &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: 77, Step: 2, Dir: dir},
					Dist: noise.Normal, Norm: 1, Offset: off}, Scale: scale}
			}
			off += int64(tt.Size())
		}
		return w
	}
	// reference builds the model from the perturbed values and runs Forward.
	reference := func(w []*tensor.Perturbation) float64 {
		byName := map[string]*tensor.Perturbation{}
		for i, tt := range ts {
			byName[tt.Name] = w[i]
		}
		if c.TieEmbeddings {
			byName["lm_head.weight"] = byName["model.embed_tokens.weight"]
		}
		pm, err := build(c, be, false, nil, func(name string, shape []int) ([]float32, error) {
			v, err := load(name, shape)
			if p := byName[name]; p != nil && err == nil {
				z := make([]float32, len(v))
				p.Stream.FillRange(z, int(p.Offset), p.Dist, p.Norm)
				for i := range v {
					v[i] = noise.Perturbed(v[i], p.Scale, z[i])
				}
			}
			return v, err
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := pm.Forward(in, Options{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return out.Loss
	}
	L := c.NumLayers
	variants := []Variant{
		{Weights: perturb(-1, L, 0, 1e-2)},          // every tensor, +
		{Weights: perturb(-1, L, 0, -1e-2)},         // every tensor, −
		{Weights: perturb(-1, -1, 1, 1e-2)},         // the embeddings (and a tied head)
		{Weights: perturb(1, 1, 2, -1e-2), From: 1}, // layer 1 alone, joining the base pass there
		{Weights: perturb(L, L, 3, 1e-2), From: L},  // the final norm (and an untied head), after the last layer
		{}, // nothing perturbed
	}
	if c.TieEmbeddings {
		variants[4].From = 0 // the tied head is the embeddings: from the start
	}
	got, _, err := m.Losses(in, labels, Variant{}, variants)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range variants {
		w := v.Weights
		if w == nil {
			w = make([]*tensor.Perturbation, len(ts))
		}
		want := reference(w)
		if math.Float64bits(got[i]) != math.Float64bits(want) {
			t.Errorf("variant %d: loss %.17g, the perturbed model's Forward %.17g", i, got[i], want)
		}
		alone, _, err := m.Losses(in, labels, Variant{}, []Variant{v})
		if err != nil {
			t.Fatal(err)
		}
		if alone[0] != got[i] {
			t.Errorf("variant %d: %.17g alone, %.17g beside the others", i, alone[0], got[i])
		}
	}
	if got[0] == got[1] || got[0] == got[5] {
		t.Errorf("the perturbations did not move the loss: %v", got)
	}
}
