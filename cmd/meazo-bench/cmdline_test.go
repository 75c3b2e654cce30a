package main

import (
	"io"
	"strings"
	"testing"
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
	} {
		var stderr strings.Builder
		status := modes.Exec(c.args, nil, io.Discard, &stderr)
		if status != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", c.args, status, stderr.String(), c.want)
		}
	}
}
