package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestZOStepRun runs zostep with -steps on the tiny Qwen3 fixture's config
// and on Ministral-3's tiny config in bfloat16 (the GPU session's models
// parts run Qwen3-8B and Ministral-3 14B so), and checks the lines those
// parts read: the step against two forwards and the run of steps.
func TestZOStepRun(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		args []string
	}{
		{filepath.Join(fixture.Dir(t, "fixtures", "models", "qwen3-tiny"), "config.json"), nil},
		{"../../model/testdata/ministral3/ministral3-tiny/config.json", []string{"-bf16"}},
	} {
		var out bytes.Buffer
		args := append([]string{"-model", tc.cfg, "-shapes", "2x16,2x8", "-q", "1", "-reps", "1", "-steps", "3", "-threads", "1"}, tc.args...)
		if err := runZOStep(args, &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, w := range []string{
			`^2x8 +ZO step q=1 +[0-9.]+ +[0-9.]+ +\d+ +[0-9.]+% +[0-9.]+$`,
			`^2x16 +3 MEAZO steps on new random batches: [0-9.]+ s/step .*; loss [0-9.]+ at the first, [0-9.]+ at the last$`,
		} {
			if !regexp.MustCompile(`(?m)` + w).MatchString(out.String()) {
				t.Errorf("%v: no line matches %q in:\n%s", args, w, out.String())
			}
		}
	}
	var out bytes.Buffer
	if err := runZOStep([]string{"-steps", "-2"}, &out); err == nil || !strings.Contains(err.Error(), "-steps: must be >= 0") {
		t.Errorf("-steps -2: got %v", err)
	}
}
