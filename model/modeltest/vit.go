package modeltest

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// ViTModels are the committed tiny ViTForImageClassification fixtures
// (scripts/make_vit_fixtures.py).
var ViTModels = []string{"vit/vit-tiny"}

// vitReferences checks a ViT fixture on b against HF's float64 references:
// hidden states and logits within tol.Logits, the loss within tol.Loss, a
// repeat run bit-identical, the logits with the fixture's PEFT adapter
// (LoRA on query/value, the classifier in modules_to_save) within
// tol.Logits, those with its all-linear adapter (lora-all-linear: LoRA on
// every linear layer of the encoder, whose k, o and MLP terms go through
// the same backend ops) within tol.Logits, its adapters merged as vitMerge
// checks, and nothing left allocated.
func vitReferences(t *testing.T, b tensor.Backend, dir string, tol backendtest.Tolerance) {
	leaks := leakCheck(t, b)
	m, err := model.LoadViT(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.Open(filepath.Join(dir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	read := func(name string) []float64 {
		v, err := ref.Float64(name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	pixels, err := ref.Float32("pixel_values")
	if err != nil {
		t.Fatal(err)
	}
	labels64, err := ref.Int64("labels")
	if err != nil {
		t.Fatal(err)
	}
	n := len(labels64)
	labels := make([]int, n)
	for i, l := range labels64 {
		labels[i] = int(l)
	}
	states, err := m.HiddenStates(pixels, n)
	if err != nil {
		t.Fatal(err)
	}
	want := read("hidden_states_f64")
	per := len(want) / len(states)
	for l, s := range states {
		closeTo(t, fmt.Sprintf("hidden state %d", l), s, want[l*per:(l+1)*per], m.Config.HiddenSize, nil, tol.Logits)
	}
	loss, logits, err := m.Loss(pixels, n, labels)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "logits", logits, read("logits_f64"), m.Config.NumLabels, nil, tol.Logits)
	lossClose(t, "loss", loss, read("loss_f64")[0], tol.Loss)
	again, err := m.Logits(pixels, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i] != logits[i] {
			t.Fatalf("a second run's logit %d is %v, the first's %v", i, again[i], logits[i])
		}
	}
	a, err := lora.LoadViT(filepath.Join(dir, "lora"), m, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Attach(m)
	adapted, err := m.Logits(pixels, n)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "logits with the PEFT adapter", adapted, read("lora_logits_f64"), m.Config.NumLabels, nil, tol.Logits)
	m.Adapter = nil
	vitAllLinear(t, m, dir, pixels, n, tol)
	vitMerge(t, m, dir, pixels, n, logits, tol)
	m.Free()
	leaks("the ViT's load, forward and loss")
}

// ViT is Models for the ViT fixtures alone (a backend's encoder attention
// paths, each forced in turn): vitReferences on every committed ViT
// fixture within tol.
func ViT(t *testing.T, b tensor.Backend, tol backendtest.Tolerance) { vitModels(t, b, tol) }

// vitModels runs vitReferences on every committed ViT fixture.
func vitModels(t *testing.T, b tensor.Backend, tol backendtest.Tolerance) {
	for _, name := range ViTModels {
		t.Run(filepath.Base(name), func(t *testing.T) { vitReferences(t, b, CommittedDir(t, name), tol) })
	}
}

// vitAllLinear checks the logits of m with the fixture's PEFT adapter on
// every linear layer of the encoder (scripts/make_vit_lora_fixture.py)
// against PEFT's float64 ones, within tol.Logits.
func vitAllLinear(t *testing.T, m *model.ViT, dir string, pixels []float32, n int, tol backendtest.Tolerance) {
	ldir := filepath.Join(dir, "lora-all-linear")
	ref, err := safetensors.Open(filepath.Join(ldir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Float64("lora_logits_f64")
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.LoadViT(ldir, m, false)
	if err != nil {
		t.Fatal(err)
	}
	a.Attach(m)
	defer func() { m.Adapter = nil }()
	got, err := m.Logits(pixels, n)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "logits with the all-linear PEFT adapter", got, want, m.Config.NumLabels, nil, tol.Logits)
}

// vitMerge checks lora.MergeViT on m's backend with each of the fixture's
// PEFT adapters (q/v, all-linear, and lora-layers' layers_to_transform):
// the merged copy's logits are those of m with the adapter attached within
// tol.Logits (the float32 tolerance: W + s·B·A rounds once where the
// attached adapter adds s·B(A·x) to W·x) and those of the same merge on
// the CPU within tol.Logits; the model merged from keeps its logits (base, bit for bit);
// and FreeMergedViT releases everything the merge made (backends that
// count what is alive: backendtest.Counter).
func vitMerge(t *testing.T, m *model.ViT, dir string, pixels []float32, n int, base []float32, tol backendtest.Tolerance) {
	t.Helper()
	host, err := model.LoadViT(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Free()
	for _, name := range []string{"lora", "lora-all-linear", "lora-layers"} {
		t.Run("merged "+name, func(t *testing.T) {
			logits := func(m *model.ViT) []float32 {
				t.Helper()
				got, err := m.Logits(pixels, n)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			a, err := lora.LoadViT(filepath.Join(dir, name), m, false)
			if err != nil {
				t.Fatal(err)
			}
			a.Attach(m)
			attached := logits(m)
			m.Adapter = nil

			leaks := leakCheck(t, m.Backend)
			merged := lora.MergeViT(m, a.View(a.Params()))
			got := logits(merged)
			lora.FreeMergedViT(merged, m)
			leaks("MergeViT and FreeMergedViT of " + name)
			if again := logits(m); !slices.Equal(again, base) {
				t.Errorf("merging %s changed the logits of the model merged from", name)
			}

			cpuMerged := lora.MergeViT(host, a.View(a.Params()))
			want := logits(cpuMerged)
			lora.FreeMergedViT(cpuMerged, host)

			closeTo(t, "merged "+name+" vs attached", got, fixture.Widen(attached), m.Config.NumLabels, nil, tol.Logits)
			closeTo(t, "merged "+name+" vs the CPU's merge", got, fixture.Widen(want), m.Config.NumLabels, nil, tol.Logits)
		})
	}
}
