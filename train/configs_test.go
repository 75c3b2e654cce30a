package train

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedConfigsLoad loads every file in configs/ and checks the paper's
// protocol values.
func TestShippedConfigsLoad(t *testing.T) {
	paths, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(paths) < 90 {
		t.Fatalf("found %d configs (%v)", len(paths), err)
	}
	for _, p := range paths {
		c, err := Load(p, nil)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if c.Optimizer.Eps != 1e-6 || c.Train.BatchSize != 8 || c.Optimizer.Beta2 != 0.999 {
			t.Errorf("%s: eps %g, batch %d, beta2 %g; want the paper's 1e-6, 8, 0.999", p, c.Optimizer.Eps, c.Train.BatchSize, c.Optimizer.Beta2)
		}
		wantSteps := 10000
		if c.Adapter.Kind == "prompt" {
			wantSteps = 20000
		}
		if c.Train.Steps != wantSteps {
			t.Errorf("%s: %d steps, want %d", p, c.Train.Steps, wantSteps)
		}
		if strings.Contains(p, "grouped") != c.Adapter.Grouped {
			t.Errorf("%s: grouped = %v", p, c.Adapter.Grouped)
		}
	}
}
