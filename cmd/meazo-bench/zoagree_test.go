package main

import (
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestZOAgreeBF16NeedsBF16Weights: zoagree -bf16 on a checkpoint that
// stores no BF16 weight is refused (it compared float32 weights under a
// bfloat16 heading); on the checkpoint's BF16 copy it runs.
func TestZOAgreeBF16NeedsBF16Weights(t *testing.T) {
	dir := fixture.Dir(t, "fixtures", "models", "llama-tiny")
	args := []string{"zoagree", "-a", "cpu", "-b", "cpu", "-directions", "2", "-eps", "1e-3", "-bf16"}
	var stderr strings.Builder
	if status := modes.Exec(append(args, "-model", dir), nil, io.Discard, &stderr); status == 0 ||
		!strings.Contains(stderr.String(), "stores no weight as BF16") {
		t.Errorf("zoagree -bf16 on float32 weights: status %d, stderr %q; want a refusal", status, stderr.String())
	}
	stderr.Reset()
	var stdout strings.Builder
	if status := modes.Exec(append(args, "-model", filepath.Join(dir, "bf16")), nil, &stdout, &stderr); status != 0 ||
		!strings.Contains(stdout.String(), "1e-03") {
		t.Errorf("zoagree -bf16 on the BF16 checkpoint: status %d, stderr %q, stdout %q", status, stderr.String(), stdout.String())
	}
}

// TestAgreementOfNonFinite: a backend whose projected gradients are NaN
// agrees with nothing (it was reported as 100 % within 1e-3, the relative
// difference 0).
func TestAgreementOfNonFinite(t *testing.T) {
	var out strings.Builder
	nan := math.NaN()
	reportAgreement(&out, 1e-3, []float64{1.5, -2, 3, 0.5}, []float64{nan, nan, math.Inf(1), 0.5})
	f := strings.Fields(out.String())
	if want := []string{"1e-03", "+Inf", "+Inf", "+Inf", "25.0%", "25.0%"}; !slices.Equal(f[:6], want) {
		t.Errorf("line %q, want it to begin %q", out.String(), want)
	}
}
