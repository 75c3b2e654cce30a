package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestBadCommandLines: a stray argument, a required flag left out or a flag
// value the command cannot use is a bad command line (exit 2, the flag
// named), said before a model is loaded.
func TestBadCommandLines(t *testing.T) {
	const none = "/nonexistent"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"forward", "stray"}, `unexpected argument "stray" (flags only)`},
		{[]string{"forward", "--model", none, "--input", "in.json"}, "--input (a ViT: or --images) and --out are required"},
		{[]string{"forward", "--model", none, "--input", "in.json", "--out", "o.safetensors", "--backend", "gpu"}, `--backend: unknown backend "gpu"`},
		{[]string{"generate", "--model", none, "--prompt", "a", "--backend", "gpu"}, `--backend: unknown backend "gpu"`},
		{[]string{"generate", "--model", none, "--prompt", "a", "--stop", "eos"}, `--stop: "eos" is not a token id`},
		{[]string{"generate", "--model", none, "--prompt", "a", "--threads", "-1"}, "--threads must be at least 0, got -1"},
		{[]string{"forward", "--model", none, "--input", "in.json", "--out", "o.safetensors", "--threads", "-2"}, "--threads must be at least 0, got -2"},
		{[]string{"merge", "--model", none, "--adapter", none, "--out", none, "--backend", "gpu"}, `--backend: unknown backend "gpu"`},
		{[]string{"example", "stray"}, `unexpected argument "stray" (flags only)`},
		{[]string{"example", "--task", "sst2"}, "--model and --data are required"},
		// A mistyped task gets meazo-train's and meazo-eval task's "did you mean".
		{[]string{"example", "--model", none, "--data", none, "--task", "sst"}, `--task: unknown task "sst" (want sst2, squad, xsum, classification or generation; did you mean "sst2"?)`},
		{[]string{"example", "--model", none, "--data", none, "--task", "SQuAD"}, `did you mean "squad"?`},
		{[]string{"example", "--model", none, "--data", none, "--task", "summaries"}, `--task: unknown task "summaries" (want sst2, squad, xsum, classification or generation)`},
		{[]string{"example", "--model", none, "--data", none, "--task", "pets"}, `--task: task "pets" is the image task: want a text task`},
		{[]string{"example", "--model", none, "--data", none}, "--task is required"},
		{[]string{"example", "--model", none, "--data", none, "--task", "sst2", "--index", "-1"}, "--index -1 is negative"},
		{[]string{"noise", "--dist", "uniform"}, "--dist: "},
		{[]string{"noise", "--n", "0"}, "--n 0 outside 1..2^28"},
		{[]string{"noise", "--group", "-1"}, "--group -1 is negative"},
		{[]string{"noise", "--step", "4294967296"}, "--step 4294967296 exceeds 2^32-1"},
	} {
		var stderr strings.Builder
		status := commands.Exec(c.args, nil, io.Discard, &stderr)
		if status != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", c.args, status, stderr.String(), c.want)
		}
	}
}

// TestLoadFlags: forward and generate take meazo-eval task's --threads and
// --bf16-weights. On a BF16 checkpoint the weights kept in bfloat16 give the
// same logits, bit for bit, and the same tokens as the float32 copy (the
// products are computed in float32 either way), at any thread count.
func TestLoadFlags(t *testing.T) {
	dir := fixture.Dir(t, "fixtures", "models", "llama-tiny", "bf16")
	in := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(in, []byte(`{"input_ids": [[1, 5, 9, 13, 2], [1, 7, 7, 3, 4]], "labels": [[-100, 5, 9, 13, 2], [-100, -100, 7, 3, 4]]}`), 0o644)
	var logits [][]byte
	var gens []string
	for _, extra := range [][]string{nil, {"--bf16-weights", "--threads", "1"}} {
		out := filepath.Join(t.TempDir(), "out.safetensors")
		if err := runForward(append([]string{"--model", dir, "--input", in, "--out", out}, extra...), nil, io.Discard); err != nil {
			t.Fatalf("forward %q: %v", extra, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, b)
		var stdout bytes.Buffer
		if err := runGenerate(append([]string{"--model", dir, "--input", in, "--max-new-tokens", "4", "--stop", "none"}, extra...), nil, &stdout); err != nil {
			t.Fatalf("generate %q: %v", extra, err)
		}
		var got struct{ Sequences [][]int }
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || len(got.Sequences) != 2 {
			t.Fatalf("generate %q printed %s (%v)", extra, stdout.String(), err)
		}
		gens = append(gens, stdout.String())
	}
	if !bytes.Equal(logits[0], logits[1]) {
		t.Error("forward --bf16-weights --threads 1 wrote other logits than float32 weights on all cores")
	}
	if gens[0] != gens[1] {
		t.Errorf("generate: %s with --bf16-weights --threads 1, %s without", gens[1], gens[0])
	}
}
