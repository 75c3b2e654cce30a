package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestNoiseCommand(t *testing.T) {
	var out strings.Builder
	if err := runNoise(strings.Fields("--seed 42 --step 3 --direction 0 --group 0 --dist normal --n 6"), nil, &out); err != nil {
		t.Fatal(err)
	}
	var got []float64
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("output %q is not a JSON array: %v", out.String(), err)
	}
	want := []float64{0.60350460, -1.3668854, 1.1087419, -0.45288399, 1.5191921, 0.075946189} // the noise contract (docs/ALGORITHMS.md)
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"--dist gauss", "--n 0", "--group -1", "--step 99999999999"} {
		if err := runNoise(strings.Fields(bad), nil, &out); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
