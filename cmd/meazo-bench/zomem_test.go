package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestZOMem runs zomem's forward and each kind of step (LoRA with an
// optimizer that keeps state and one that keeps none, grouped, prompt
// tuning) on the tiny Qwen3 fixture's config, and checks the lines a
// memory table is made of: what was run, the optimizer's state and the
// peak.
func TestZOMem(t *testing.T) {
	cfg := filepath.Join(fixture.Dir(t, "fixtures", "models", "qwen3-tiny"), "config.json")
	peak := `^peak RSS [0-9.]+ GiB$`
	if runtime.GOOS != "linux" { // where the peak is read from /proc
		peak = `^peak RSS not measured`
	}
	// step is the end of a step's line; state the line after it.
	step := func(q, estimation string) string {
		return `step, q=` + q + `, ` + estimation + `: [0-9.]+ s each \(2\)$`
	}
	state := func(variants, bytes string) string {
		return `^losses \[[-0-9. ]+\] \(` + variants + ` variants\), optimizer state ` + bytes + ` bytes$`
	}
	for _, tc := range []struct {
		args []string
		want []string // regular expressions, each matching a line
	}{
		{[]string{"-what", "forward"}, []string{`^plain forward of 2x8, loss only: [0-9.]+ s each \(2\)$`, `^then a forward of 4x8 \(the rows of a joint step at q=1`}},
		{[]string{"-opt", "zo-adam"}, []string{`^LoRA r=16 on q_proj/v_proj of every layer, \d+ parameters; zo-adam ` + step("1", "joint"), state("2", `[1-9]\d*`)}},
		{[]string{"-opt", "fzoo", "-q", "2"}, []string{`; fzoo ` + step("2", "joint"), state("3", "0")}},
		{[]string{"-grouped"}, []string{`; meazo ` + step("1", `grouped \(\d+ groups, one per layer\) with prefix caching`)}},
		{[]string{"-adapter", "prompt", "-virtual", "4"}, []string{`^prompt tuning, 4 virtual tokens, \d+ parameters; meazo ` + step("1", "joint")}},
	} {
		var out bytes.Buffer
		args := append([]string{"-model", cfg, "-shape", "2x8", "-threads", "1"}, tc.args...)
		if err := runZOMem(args, &out); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		for _, w := range append(tc.want, peak) {
			if !regexp.MustCompile(`(?m)` + w).MatchString(out.String()) {
				t.Errorf("%v: no line matches %q in:\n%s", tc.args, w, out.String())
			}
		}
	}
	var out bytes.Buffer
	if err := runZOMem([]string{"-model", cfg, "-adapter", "prompt", "-grouped"}, &out); err == nil || !strings.Contains(err.Error(), "-grouped") {
		t.Errorf("-adapter prompt -grouped: got %v, want an error naming -grouped", err)
	}
}
