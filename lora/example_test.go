package lora_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

// A LoRA adapter that PEFT saved (testdata/make_peft_r2.py), loaded for
// the model it was made for, attached so that the model's forwards include
// it, and saved again in PEFT's format: the same values come back. The
// model here is random weights of the adapter's base shape (a two-layer
// Llama of hidden size 16); a real one is model.Load of its directory.
func ExampleLoad() {
	m, err := model.NewRandom(&model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 32, HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4, BOSTokenID: -1,
	}, 1, 0.02)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Free()
	a, err := lora.Load("testdata/peft-r2", m, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("r=%d alpha=%g on %v: %d parameters, scale %g\n", a.Rank(), a.Alpha(), a.Targets(), a.Count(), a.Scale())
	a.Attach(m)

	dir, err := os.MkdirTemp("", "lora-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "adapter")
	if err := a.Save(out); err != nil {
		fmt.Println(err)
		return
	}
	files, _ := os.ReadDir(out)
	for _, f := range files {
		fmt.Println(f.Name())
	}
	b, err := lora.Load(out, m, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the same values:", slices.EqualFunc(a.Params(), b.Params(), slices.Equal))
	// Output:
	// r=2 alpha=4 on [q_proj v_proj]: 224 parameters, scale 2
	// adapter_config.json
	// adapter_model.safetensors
	// the same values: true
}

// A fresh adapter on every projection of a model's layers (PEFT's
// target_modules="all-linear"), as a run with adapter.targets
// [all-linear] makes it: B starts at zero, so the adapted model computes
// what the base model does until training moves it.
func ExampleNew() {
	m, err := model.NewRandom(&model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 32, HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4, BOSTokenID: -1,
	}, 1, 0.02)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Free()
	a, err := lora.New(m, lora.Options{R: 2, Alpha: 4, Targets: []string{lora.AllLinear}, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("r=%d on %v: %d parameters\n", a.Rank(), a.Targets(), a.Count())
	_, err = lora.New(m, lora.Options{Targets: []string{"fc1"}})
	fmt.Println(err)
	// Output:
	// r=2 on [q_proj k_proj v_proj o_proj gate_proj up_proj down_proj]: 1024 parameters
	// lora: target module "fc1" is not a projection of this model (LlamaForCausalLM's: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, or all-linear alone for all)
}
