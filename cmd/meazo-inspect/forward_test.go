package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/train"
)

// rows turns a flat [B*T] list into [B][T].
func rows(v []int, t int) [][]int {
	var out [][]int
	for i := 0; i < len(v); i += t {
		out = append(out, v[i:i+t])
	}
	return out
}

// TestForwardAndGenerateCLI runs meazo-inspect forward and generate on the
// fixture models, with and without the LoRA adapter, and compares with the
// HF references.
func TestForwardAndGenerateCLI(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen3-tiny"} {
		for _, adapter := range []string{"", "lora"} {
			t.Run(name+"/"+adapter, func(t *testing.T) {
				dir := fixture.Dir(t, "fixtures", "models", name)
				ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
				tt := ref.Shape("input_ids")[1]
				in := filepath.Join(t.TempDir(), "in.json")
				b, _ := json.Marshal(map[string]any{"input_ids": rows(ref.Ints("input_ids"), tt),
					"attention_mask": rows(ref.Ints("attention_mask"), tt), "labels": rows(ref.Ints("labels"), tt)})
				os.WriteFile(in, b, 0o644)
				out := filepath.Join(t.TempDir(), "out.safetensors")
				args := []string{"--model", dir, "--input", in, "--out", out}
				prefix := ""
				if adapter != "" {
					args = append(args, "--adapter", filepath.Join(dir, adapter))
					prefix = "lora_"
				}
				var stdout bytes.Buffer
				if err := runForward(args, nil, &stdout); err != nil {
					t.Fatal(err)
				}
				f, err := safetensors.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				perSeq, _ := f.Float64("loss_per_seq")
				for s, want := range ref.F64(prefix + "loss_per_seq_f64") {
					if math.Abs(perSeq[s]-want) > 2e-5 {
						t.Errorf("loss_per_seq[%d] = %v, want %v", s, perSeq[s], want)
					}
				}
				if info, _ := f.Info("logits"); !slices.Equal(info.Shape, ref.Shape("logits_f32")) {
					t.Errorf("logits shape %v, want %v", info.Shape, ref.Shape("logits_f32"))
				}

				gin := filepath.Join(t.TempDir(), "gen.json")
				gt := ref.Shape("genbatch_input_ids")[1]
				b, _ = json.Marshal(map[string]any{"input_ids": rows(ref.Ints("genbatch_input_ids"), gt),
					"attention_mask": rows(ref.Ints("genbatch_attention_mask"), gt)})
				os.WriteFile(gin, b, 0o644)
				if adapter != "" {
					return // the fixture has no batched generation with the adapter
				}
				stdout.Reset()
				if err := runGenerate([]string{"--model", dir, "--input", gin, "--max-new-tokens", "8", "--stop", "none"}, nil, &stdout); err != nil {
					t.Fatal(err)
				}
				var got struct{ Sequences [][]int }
				if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				want := rows(ref.Ints("genbatch_new_tokens"), 8)
				for r := range want {
					if !slices.Equal(got.Sequences[r], want[r]) {
						t.Errorf("row %d: %v, want %v", r, got.Sequences[r], want[r])
					}
				}
			})
		}
	}
}

func TestForwardCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"input_ids": [[1,2,3],[4,5]]}`), 0o644)
	err := runForward([]string{"--model", dir, "--input", bad, "--out", filepath.Join(t.TempDir(), "o.st")}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("ragged input: %v, want an error naming row 1", err)
	}
	// A misspelt key is named, not dropped (the logits were a batch's
	// without its mask).
	typo := filepath.Join(dir, "typo.json")
	os.WriteFile(typo, []byte(`{"input_ids": [[1,2,3]], "attention_masks": [[0,1,1]]}`), 0o644)
	err = runForward([]string{"--model", dir, "--input", typo, "--out", filepath.Join(t.TempDir(), "o.st")}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `unknown field "attention_masks": the keys are input_ids, attention_mask`) {
		t.Errorf("a misspelt key: %v, want an error naming it", err)
	}
	// An --out that exists and is not a safetensors file is not replaced.
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("mine\n"), 0o644)
	err = runForward([]string{"--model", dir, "--input", writeBatch(t), "--out", notes}, nil, &bytes.Buffer{})
	if b, _ := os.ReadFile(notes); err == nil || !strings.Contains(err.Error(), "exists and is not a safetensors file") || string(b) != "mine\n" {
		t.Errorf("--out over a text file: %v", err)
	}
	// A run directory given as the model is named as one.
	run := filepath.Join(dir, "run")
	os.MkdirAll(filepath.Join(run, "best"), 0o755)
	err = runForward([]string{"--model", run, "--input", writeBatch(t), "--out", filepath.Join(t.TempDir(), "o.st")}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "a run directory, not a model") {
		t.Errorf("a run directory as the model: %v, want it named as one", err)
	}
	// So is a saved adapter (a LoRA run's best/), with where it goes.
	os.WriteFile(filepath.Join(run, "best", "adapter_config.json"), []byte(`{"peft_type": "LORA"}`), 0o644)
	err = runForward([]string{"--model", filepath.Join(run, "best"), "--input", writeBatch(t), "--out", filepath.Join(t.TempDir(), "o.st")}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "a saved adapter (adapter_config.json, no config.json), not a model: the model is its base model, with --adapter "+filepath.Join(run, "best")+" where the command takes one") {
		t.Errorf("a saved adapter as the model: %v, want it named as one", err)
	}
}

// demoModel writes the demo's tiny model and returns its directory.
func demoModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "model")
}

// writeBatch writes forward's input file: two sequences of 5 tokens, the
// last 2 supervised.
func writeBatch(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.json")
	b, _ := json.Marshal(map[string]any{"input_ids": [][]int{{10, 11, 12, 13, 14}, {20, 21, 22, 23, 24}},
		"labels": [][]int{{-100, -100, -100, 13, 14}, {-100, -100, -100, 23, 24}}})
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestForwardPromptTuning: forward with a prompt-tuning adapter writes the
// logits of the virtual tokens' rows too, as PEFT returns them, says which
// rows are the input's, and its loss is the model's with the prompt.
func TestForwardPromptTuning(t *testing.T) {
	dir := demoModel(t)
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prompttune.Random(m, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(t.TempDir(), "prompt")
	if err := p.Save(adapter, m); err != nil {
		t.Fatal(err)
	}
	in, out := writeBatch(t), filepath.Join(t.TempDir(), "out.safetensors")
	var stdout bytes.Buffer
	if err := runForward([]string{"--model", dir, "--adapter", adapter, "--input", in, "--out", out}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	want := "the prompt's 3 virtual tokens are positions 0-2 of each sequence's logits; the input's 5 tokens are positions 3-7"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout %q lacks %q", stdout.String(), want)
	}
	f, err := safetensors.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, _ := f.Info("logits"); !slices.Equal(info.Shape, []int{2, 8, m.VocabSize}) {
		t.Errorf("logits shape %v, want [2 8 %d]", info.Shape, m.VocabSize)
	}
	p.Attach(m)
	ref, err := m.Forward(model.Input{B: 2, T: 5, Tokens: []int{10, 11, 12, 13, 14, 20, 21, 22, 23, 24}},
		model.Options{Labels: []int{-100, -100, -100, 13, 14, -100, -100, -100, 23, 24}})
	if err != nil {
		t.Fatal(err)
	}
	if loss, _ := f.Float64("loss"); math.Abs(loss[0]-ref.Loss) > 1e-6 {
		t.Errorf("loss %v, the model's with the prompt %v", loss[0], ref.Loss)
	}
}

// TestNonFiniteModelRefused: a model with a NaN weight is refused by
// forward and generate, naming what is not finite, and forward writes
// nothing.
func TestNonFiniteModelRefused(t *testing.T) {
	dir := demoModel(t)
	fixture.PoisonWeights(t, filepath.Join(dir, "model.safetensors"), "model.norm.weight")
	in, out := writeBatch(t), filepath.Join(t.TempDir(), "out.safetensors")
	err := runForward([]string{"--model", dir, "--input", in, "--out", out}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the logits are not finite") || !strings.Contains(err.Error(), "nothing written") {
		t.Errorf("forward: %v, want the logits refused", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("forward wrote %s", out)
	}
	err = runGenerate([]string{"--model", dir, "--input", in, "--max-new-tokens", "2"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the logits of sequence 0 are not finite") {
		t.Errorf("generate: %v, want the logits refused", err)
	}
}

// TestOutputsNeverOverInputs: forward's and random-model's --out may not be
// an input, lie inside the model, the adapter or a run's directory; what is
// there stays as it was.
func TestOutputsNeverOverInputs(t *testing.T) {
	dir := demoModel(t)
	in := writeBatch(t)
	run := t.TempDir()
	if err := os.WriteFile(filepath.Join(run, "run.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(dir, "model.safetensors")
	before, _ := os.ReadFile(weights)
	devLink := filepath.Join(t.TempDir(), "stdout") // a link to a device, as /dev/stdout is
	if err := os.Symlink(os.DevNull, devLink); err != nil {
		t.Skipf("no symbolic links here (%v): the rest of the checks need one", err)
	}
	for _, c := range []struct{ out, want string }{
		{devLink, "is a symbolic link"},
		{weights, "is inside the input " + dir},
		{in, "is the input " + in},
		{filepath.Join(run, "logits.safetensors"), "is inside the run directory " + run},
	} {
		err := runForward([]string{"--model", dir, "--input", in, "--out", c.out}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--out "+c.out) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("forward --out %s: %v, want %q", c.out, err, c.want)
		}
	}
	if after, _ := os.ReadFile(weights); !bytes.Equal(after, before) {
		t.Error("the weights changed")
	}
	err := commands.Run("random-model", []string{"--config", filepath.Join(dir, "config.json"), "--out", filepath.Join(run, "m")}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is inside the run directory "+run) {
		t.Errorf("random-model --out inside a run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run, "m")); !os.IsNotExist(err) {
		t.Error("random-model wrote into the run directory")
	}
}
