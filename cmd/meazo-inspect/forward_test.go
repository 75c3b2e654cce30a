package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/safetensors"
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
	err := runForward([]string{"--model", dir, "--input", bad, "--out", filepath.Join(dir, "o.st")}, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("ragged input: %v, want an error naming row 1", err)
	}
}
