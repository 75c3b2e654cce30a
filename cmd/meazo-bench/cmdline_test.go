package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
)

// TestBadCommandLines: a stray argument or a flag value no mode can use is a
// bad command line (exit 2, the flag named), found before a model is made or
// anything is timed. -model /nonexistent.json makes each case end at once
// should its check be lost (with another message: the test fails).
func TestBadCommandLines(t *testing.T) {
	const none = "/nonexistent.json"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"forward", "-model", none, "stray"}, `unexpected argument "stray" (flags only)`},
		{[]string{"forward", "-model", none, "-shapes", "8x128,1xabc"}, `-shapes: bad shape "1xabc"`},
		{[]string{"forward", "-model", none, "-backend", "gpu"}, `-backend: unknown backend "gpu"`},
		{[]string{"forward", "-model", none, "-reps", "0"}, "-reps: must be >= 1, got 0"},
		{[]string{"fullstep", "-model", none, "stray"}, `unexpected argument "stray"`},
		{[]string{"fullstep", "-model", none, "-opt", "sgd"}, `-opt "sgd": want meazo`},
		{[]string{"fullstep", "-model", none, "-opt", "mezo"}, `-opt "mezo": want meazo, zo-sgd, zo-adam, radazo or fzoo (MeZO's optimizer is zo-sgd; meazo is MEAZO)`},
		{[]string{"fullstep", "-model", none, "-q", "0"}, "-q: must be >= 1, got 0"},
		{[]string{"fullstep", "-model", none, "-dist", "uniform"}, "-dist: "},
		{[]string{"fullstep", "-model", none, "-backend", "gpu"}, `-backend: unknown backend "gpu"`},
		{[]string{"gemm", "-models", "nope", "stray"}, `unexpected argument "stray"`},
		{[]string{"gemm", "-models", "nope"}, `-models: unknown model "nope"`},
		{[]string{"gemm", "-m", "-1"}, `-m: bad row count "-1"`},
		{[]string{"gemm", "-path", "sse"}, `-path: `},
		{[]string{"vitstep", "-model", none, "stray"}, `unexpected argument "stray"`},
		{[]string{"vitstep", "-model", none, "-batch", "0"}, "-batch: must be between 1 and 4096, got 0"},
		{[]string{"vitstep", "-model", none, "-backend", "gpu"}, `-backend: unknown backend "gpu"`},
		{[]string{"zoagree", "-model", none, "stray"}, `unexpected argument "stray"`},
		{[]string{"zoagree", "-model", none, "-b", "gpu"}, `-b: unknown backend "gpu"`},
		{[]string{"zoagree", "-model", none, "-eps", "x"}, `-eps: bad value "x"`},
		{[]string{"zostep", "-model", none, "stray"}, `unexpected argument "stray"`},
		{[]string{"zostep", "-model", none, "-q", "1,0"}, `-q: bad value "0"`},
		{[]string{"zostep", "-model", none, "-shapes", "8"}, `-shapes: bad shape "8"`},
		{[]string{"zostep", "-model", "qwen06b", "-top", "-1"}, "-top: want 0 to the model's 28 layers, got -1"},
		{[]string{"zostep", "-model", "qwen06b", "-targets", "c_attn"}, "-targets: "},
		{[]string{"forward", "-model", none, "-threads", "0"}, "-threads must be at least 1, got 0"},
		{[]string{"fullstep", "-model", none, "-threads", "-1"}, "-threads must be at least 1, got -1"},
		{[]string{"gemm", "-threads", "0"}, "-threads must be at least 1, got 0"},
		{[]string{"vitstep", "-model", none, "-threads", "0"}, "-threads must be at least 1"},
		{[]string{"zostep", "-model", none, "-threads", "0"}, "-threads must be at least 1"},
		{[]string{"zoagree", "-model", none, "-directions", "0"}, "-directions must be at least 1, got 0"},
	} {
		var stderr strings.Builder
		status := modes.Exec(c.args, nil, io.Discard, &stderr)
		if status != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", c.args, status, stderr.String(), c.want)
		}
	}
}

// TestAliases: -bf16-weights, as meazo-train and meazo-eval task spell it,
// is -bf16 in the modes that time a model; -batch-size is vitstep's -batch.
func TestAliases(t *testing.T) {
	if fb, err := parseForward([]string{"-model", "qwen06b", "-bf16-weights"}); err != nil || !fb.bf16 {
		t.Errorf("forward -bf16-weights: %v", err)
	}
	if zb, err := parseZOStep([]string{"-model", "qwen06b", "-bf16-weights"}); err != nil || !zb.bf16 {
		t.Errorf("zostep -bf16-weights: %v", err)
	}
	if ab, err := parseZOAgree([]string{"-model", "m", "-bf16-weights"}); err != nil || !ab.bf16 {
		t.Errorf("zoagree -bf16-weights: %v", err)
	}
	if vb, err := parseViTStep([]string{"-model", "../../scripts/gpu/vit-b16-pets-config.json", "-batch-size", "4"}); err != nil || vb.batch != 4 {
		t.Errorf("vitstep -batch-size 4: %v", err)
	}
	var stderr strings.Builder // fullstep has no parse function: -bf16-weights gets to the missing model
	if status := modes.Exec([]string{"fullstep", "-bf16-weights", "-model", "/nonexistent.json"}, nil, io.Discard, &stderr); status != 2 ||
		!strings.Contains(stderr.String(), `-model "/nonexistent.json" is not built in`) {
		t.Errorf("fullstep -bf16-weights: status %d, %s", status, stderr.String())
	}
}

// -cpuprofile into the model's own config.json (or any file of a model
// directory) is refused: os.Create truncated it.
func TestProfileNotOverInputs(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/config.json"
	if err := os.WriteFile(cfg, []byte(`{"model_type": "llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := startProfile(cfg, cfg); err == nil {
		t.Fatal("a profile over the -model config was accepted")
	}
	if b, _ := os.ReadFile(cfg); string(b) != `{"model_type": "llama"}` {
		t.Errorf("the config became %q", b)
	}
}

// TestForwardMemoryRefused: a shape whose forward cannot fit in memory is
// refused with the figures (-shapes 100000x100000 died of "runtime: out of
// memory"); one that fits passes.
func TestForwardMemoryRefused(t *testing.T) {
	c := &model.Config{HiddenSize: 64, IntermediateSize: 128, VocabSize: 512}
	if err := checkForwardMemory(c, 100000, 100000, true, 24<<30); err == nil || !strings.Contains(err.Error(), "a forward of 100000×100000 takes at least") {
		t.Errorf("100000×100000 on 24 GiB: %v", err)
	}
	if err := checkForwardMemory(c, 8, 128, true, 24<<30); err != nil {
		t.Errorf("8×128: %v", err)
	}
}
