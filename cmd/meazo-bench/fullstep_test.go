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

// TestFullStepModes runs each -what of fullstep on the tiny Qwen3 fixture's
// config and checks the lines its users read: the step's time split, the
// forwards', and every pair's ratio with their median.
func TestFullStepModes(t *testing.T) {
	cfg := filepath.Join(fixture.Dir(t, "fixtures", "models", "qwen3-tiny"), "config.json")
	for _, tc := range []struct {
		what string
		want []string // regular expressions, each matching a line
	}{
		{"step", []string{`step, q=1, normal noise, \d+ parameters: [0-9.]+ s \(evaluating the variants [0-9.]+ s, the rest: update -?[0-9.]+ s; medians of 3\)`, `peak RSS`}},
		{"forward", []string{`^2 forwards of 2x8: [0-9.]+ s$`, `forward of 4x8 \(the rows of a step, one set of weights\): [0-9.]+ s`}},
		{"pair", []string{`^pair 3: step [0-9.]+ s .* step / 2 forwards [0-9.]+(; CPU time [0-9.]+ s / [0-9.]+ s = [0-9.]+)?$`, `step / 2 forwards: median [0-9.]+ of 3 pairs`}},
	} {
		var out bytes.Buffer
		if err := runFullStep([]string{"-model", cfg, "-shape", "2x8", "-reps", "3", "-threads", "1", "-what", tc.what}, &out); err != nil {
			t.Fatalf("-what %s: %v", tc.what, err)
		}
		want := tc.want
		if tc.what == "pair" && runtime.GOOS == "linux" { // where the process's CPU time is read
			want = append(want, `; CPU time [0-9.]+ s / [0-9.]+ s = [0-9.]+$`, `^in CPU time: median [0-9.]+ \(min [0-9.]+, max [0-9.]+\)$`)
		}
		for _, w := range want {
			if !regexp.MustCompile(`(?m)` + w).MatchString(out.String()) {
				t.Errorf("-what %s: no line matches %q in:\n%s", tc.what, w, out.String())
			}
		}
	}
	var out bytes.Buffer
	err := runFullStep([]string{"-model", cfg, "-what", "both"}, &out)
	if err == nil || !strings.Contains(err.Error(), "want step, forward or pair") {
		t.Errorf("-what both: got %v, want an error naming the choices", err)
	}
}
