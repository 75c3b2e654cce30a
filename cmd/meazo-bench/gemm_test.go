package main

import (
	"bytes"
	"regexp"
	"testing"
)

// TestGEMMPair: with -pair, every shape's line ends with the full-parameter
// pair's GFLOP/s and its time over ours, under a header naming both.
func TestGEMMPair(t *testing.T) {
	var out bytes.Buffer
	if err := runGEMM([]string{"-models", "vitb16", "-m", "8", "-reps", "1", "-threads", "1", "-pair"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`(?m)^shape .* pair pair/ours$`,
		`(?m)^vitb16/qkvo +8 +768 +768 .* [0-9.]+ +[0-9.]+x$`,
		`(?m)^vitb16/fc2 +8 +3072 +768 .* [0-9.]+ +[0-9.]+x$`,
	} {
		if !regexp.MustCompile(w).MatchString(out.String()) {
			t.Errorf("no line matches %q in:\n%s", w, out.String())
		}
	}
}
