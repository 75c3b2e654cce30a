package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/safetensors"
)

// TestMergeCLI merges each tiny fixture's LoRA adapter (PEFT's, B nonzero)
// with meazo-inspect merge and runs the merged model as a plain one with
// forward and generate: its logits are HF's PeftModel's with the adapter
// (the references' lora_logits_f64, within the fixtures' LoRA tolerance)
// and its greedy tokens theirs (lora_genN_new_tokens).
func TestMergeCLI(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen3-tiny"} {
		t.Run(name, func(t *testing.T) {
			dir := fixture.Dir(t, "fixtures", "models", name)
			ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
			merged := filepath.Join(t.TempDir(), "merged")
			var stdout bytes.Buffer
			if err := runMerge([]string{"--backend", "cpu", "--model", dir, "--adapter", filepath.Join(dir, "lora"), "--out", merged}, nil, &stdout); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(stdout.String(), "wrote "+merged) {
				t.Errorf("merge printed %q", stdout.String())
			}
			tt := ref.Shape("input_ids")[1]
			in := filepath.Join(t.TempDir(), "in.json")
			b, _ := json.Marshal(map[string]any{"input_ids": rows(ref.Ints("input_ids"), tt), "attention_mask": rows(ref.Ints("attention_mask"), tt)})
			os.WriteFile(in, b, 0o644)
			out := filepath.Join(t.TempDir(), "out.safetensors")
			if err := runForward([]string{"--backend", "cpu", "--model", merged, "--input", in, "--out", out}, nil, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			got := fixture.Tensors(t, out)["logits"]
			mask := ref.Ints("attention_mask")
			want, v := ref.F64("lora_logits_f64"), ref.Shape("lora_logits_f64")[2]
			if d, at := fixture.MaxAbsDiff(got, want, v, func(r int) bool { return mask[r] == 1 }); d > 3e-4 {
				t.Errorf("merged model's logits: max |Δ| %.3g at row %d from PEFT's with the adapter, tolerance 3e-4", d, at/v)
			}
			for g := range 2 {
				mergedGenerates(t, merged, ref, g)
			}
		})
	}
}

// mergedGenerates: generate on the merged model continues prompt g as HF's
// PeftModel did with the adapter.
func mergedGenerates(t *testing.T, merged string, ref *fixture.Ref, g int) {
	t.Helper()
	prompt := ref.Ints(fmt.Sprintf("gen%d_prompt", g))
	in := filepath.Join(t.TempDir(), "gen.json")
	b, _ := json.Marshal(map[string]any{"input_ids": [][]int{prompt}})
	os.WriteFile(in, b, 0o644)
	var stdout bytes.Buffer
	if err := runGenerate([]string{"--backend", "cpu", "--model", merged, "--input", in, "--max-new-tokens", "8", "--stop", "none"}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	var got struct{ Sequences [][]int }
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if want := ref.Ints(fmt.Sprintf("lora_gen%d_new_tokens", g)); len(got.Sequences) != 1 || !slices.Equal(got.Sequences[0], want) {
		t.Errorf("prompt %d: %v, want PEFT's %v", g, got.Sequences, want)
	}
}

// TestMergeCLIBF16: a bf16 checkpoint's merge is written in bfloat16.
func TestMergeCLIBF16(t *testing.T) {
	dir := fixture.Dir(t, "fixtures", "models", "qwen3-tiny")
	merged := filepath.Join(t.TempDir(), "merged")
	if err := runMerge([]string{"--backend", "cpu", "--model", filepath.Join(dir, "bf16"), "--adapter", filepath.Join(dir, "lora"), "--out", merged}, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(merged, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, info := range f.Tensors() {
		if info.Dtype != safetensors.BF16 {
			t.Errorf("%s is %s, want BF16 as the base model stores it", info.Name, info.Dtype)
		}
	}
}

// TestMergeCLIF16: a float16 checkpoint's merge (OPT's published dtype) is
// written in float16, as PEFT's merge_and_unload leaves it, and the report
// says so.
func TestMergeCLIF16(t *testing.T) {
	dir := filepath.Join("..", "..", "lora", "testdata", "merge", "opt-tiny-f16")
	merged := filepath.Join(t.TempDir(), "merged")
	var stdout bytes.Buffer
	if err := runMerge([]string{"--backend", "cpu", "--model", filepath.Join(dir, "model"), "--adapter", filepath.Join(dir, "adapter"), "--out", merged}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "; weights float16") {
		t.Errorf("report %q does not say the weights are float16", stdout.String())
	}
	f, err := safetensors.Open(filepath.Join(merged, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, info := range f.Tensors() {
		if info.Dtype != safetensors.F16 {
			t.Errorf("%s is %s, want F16 as the base model stores it", info.Name, info.Dtype)
		}
	}
}

// TestMergeCLIViT: merge of a ViT adapter (the fixture's PEFT-made one on
// some layers) writes a ViTForImageClassification that forward runs from
// image files with the logits of the base with the adapter attached,
// within the float32 tolerance (the weights against PEFT's merge_and_unload
// in train's TestMergedViTLoadsInTransformers).
func TestMergeCLIViT(t *testing.T) {
	adapter := filepath.Join(vitTiny, "lora-layers")
	merged := filepath.Join(t.TempDir(), "merged")
	var stdout bytes.Buffer
	if err := runMerge([]string{"--backend", "cpu", "--model", vitTiny, "--adapter", adapter, "--out", merged}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	if want := "wrote " + merged + ": the ViTForImageClassification " + vitTiny; !strings.HasPrefix(stdout.String(), want) || !strings.Contains(stdout.String(), "of layers 0, 2 (r 4, scale 2) and the adapter's classifier (37 classes); weights float32") {
		t.Errorf("merge printed %q", stdout.String())
	}
	images := filepath.Join("../../imageproc/testdata", "scene_300x200.png") + "," + filepath.Join("../../imageproc/testdata", "gray_150x100.png")
	run := func(args ...string) []float32 {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.safetensors")
		if err := runForward(append([]string{"--backend", "cpu", "--images", images, "--out", out}, args...), nil, io.Discard); err != nil {
			t.Fatal(err)
		}
		return fixture.Tensors(t, out)["logits"]
	}
	got, want := run("--model", merged), run("--model", vitTiny, "--adapter", adapter)
	fixture.CloseLogits(t, "merged vs attached", got, want, 37, nil, 2e-4)
}

// TestMergeDtypeFlag: --dtype float32 writes the bf16 Ministral-3
// checkpoint's merged language model in float32 and prints no rounding
// line; the default (checkpoint) keeps bfloat16 and prints one; another
// value is refused with the two it takes.
func TestMergeDtypeFlag(t *testing.T) {
	src := "../../model/testdata/ministral3/ministral3-tiny/bf16"
	adapter := "../../model/testdata/ministral3/ministral3-tiny/lora"
	for _, tc := range []struct {
		args     []string
		dtype    safetensors.Dtype
		rounding bool
	}{{nil, safetensors.BF16, true}, {[]string{"--dtype", "checkpoint"}, safetensors.BF16, true}, {[]string{"--dtype", "float32"}, safetensors.F32, false}} {
		out := filepath.Join(t.TempDir(), "merged")
		var stdout bytes.Buffer
		if err := runMerge(append([]string{"--backend", "cpu", "--model", src, "--adapter", adapter, "--out", out}, tc.args...), nil, &stdout); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(stdout.String(), "rounding the merged weights to bfloat16"); got != tc.rounding {
			t.Errorf("%v: printed %q", tc.args, stdout.String())
		}
		ck, err := safetensors.OpenCheckpoint(out)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := ck.Info("model.language_model.layers.0.self_attn.q_proj.weight")
		vis, _ := ck.Info("model.vision_tower.ln_pre.weight")
		ck.Close()
		if info.Dtype != tc.dtype || vis.Dtype != safetensors.BF16 {
			t.Errorf("%v: q_proj stored as %s (want %s), the vision tower's as %s (want BF16)", tc.args, info.Dtype, tc.dtype, vis.Dtype)
		}
	}
	err := runMerge([]string{"--model", src, "--adapter", adapter, "--out", filepath.Join(t.TempDir(), "x"), "--dtype", "f16"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--dtype "f16": want checkpoint or float32`) {
		t.Errorf("--dtype f16: %v", err)
	}
}
