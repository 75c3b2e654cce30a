package model

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAdapterThatDoesNotFit: Forward, Generate and Losses refuse an adapter
// of another model's shape (a layer short, an update of the wrong width, a
// projection the model lacks) with an error, before any product reads past
// its matrices.
func TestAdapterThatDoesNotFit(t *testing.T) {
	m, err := NewRandom(tinyConfig("LlamaForCausalLM"), 3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := Load("testdata/opt/opt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	short := randomAdapter(m, 2, rng)
	short.Layers = short.Layers[:1]
	narrow := randomAdapter(m, 2, rng)
	narrow.Layers[1].Down.A = narrow.Layers[1].Down.A[:2*m.HiddenSize] // down_proj reads the MLP's width
	gate := randomAdapter(opt, 2, rng)
	gate.Layers[0].Gate = &LoRA{R: 2, A: make([]float32, 2*opt.HiddenSize), B: make([]float32, 2*opt.IntermediateSize), Scale: 1}
	for _, tc := range []struct {
		name string
		m    *Model
		a    *Adapter
		want string
	}{
		{"a layer short", m, short, "the adapter has 1 layers, the model 2"},
		{"down_proj of the hidden width", m, narrow, "layer 1's LoRA of down_proj has 64 and 64 values at rank 2: want A [r][64] and B [32][r]"},
		{"a gate on OPT", opt, gate, "layer 0's adapter updates gate_proj, which OPTForCausalLM's layers do not have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, labels := testBatch(tc.m, rng)
			tc.m.Adapter = tc.a
			_, errF := tc.m.Forward(in, Options{Labels: labels})
			_, errG := tc.m.Generate(Input{B: 1, T: 2, Tokens: []int{1, 2}}, GenerateOptions{MaxNewTokens: 1})
			tc.m.Adapter = nil
			_, _, errL := tc.m.Losses(in, labels, Variant{}, []Variant{{Adapter: tc.a}})
			for what, err := range map[string]error{"Forward": errF, "Generate": errG, "Losses": errL} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want %q", what, err, tc.want)
				}
			}
		})
	}
}
