package main

import (
	"io"
	"strings"
	"testing"
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
		{[]string{"merge", "--model", none, "--adapter", none, "--out", none, "--backend", "gpu"}, `--backend: unknown backend "gpu"`},
		{[]string{"example", "stray"}, `unexpected argument "stray" (flags only)`},
		{[]string{"example", "--task", "sst2"}, "--model and --data are required"},
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
