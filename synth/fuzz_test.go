package synth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzParseTrace feeds arbitrary spec files to ParseTrace (meazo-synth
// trace --spec, SpecHelp): an error or a trace, never a panic, a hang or
// gigabytes; a trace it accepts and whose size (steps × directions ×
// coordinates) is small runs, and writes one JSON line a step. (Its seeds
// run in every go test; make fuzz fuzzes it.)
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{
		`{"h": [1, 100], "x0": [1, 1], "optimizer": "meazo", "lr": 0.01, "eps": 1e-3, "steps": 5, "seed": 3}`,
		`{"h": [1, 2, 3], "x0": [1, 1, 1], "optimizer": "zo-adam", "lr": 0.1, "eps": 0.01, "steps": 3, "q": 2, "beta1": 0.5, "groups": [[0, 2], [1]], "mode": "cyclic"}`,
		`{"h": [1], "x0": [1], "optimizer": "fzoo", "lr": 0.1, "eps": 0.01, "steps": 2, "q": 3, "dist": "sphere"}`,
		`{"h": [1], "x0": [1], "optimizer": "radazo", "lr": 0.1, "eps": 0.01, "steps": 2, "beta2": 0.9, "dist": "ternary"}`,
		`{"h": [1], "x0": [1], "optimizer": "zo-sgd", "lr": 0, "eps": 1, "steps": 1, "q": 1000000000}`,
		`{"h": [1e300], "x0": [1e300], "optimizer": "zo-sgd", "lr": 1e300, "eps": 1e-300, "steps": 3}`,
		`{"h": [1, 1], "x0": [0, 0], "optimizer": "meazo", "lr": 1, "eps": 1, "steps": 1, "groups": [[0], [0]]}`,
		`{"h": [1], "x0": [1], "optimizer": "meazo", "lr": 1, "eps": 1, "steps": 1} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		fuzzguard.Run(func() {
			tr, err := ParseTrace(spec)
			if err != nil {
				return
			}
			var sp traceSpec // accepted: it decodes
			if err := json.Unmarshal(spec, &sp); err != nil {
				t.Fatalf("ParseTrace accepted what json.Unmarshal refuses: %v", err)
			}
			q := 1
			if sp.Q != nil {
				q = *sp.Q
			}
			if tr.steps > 1<<12 || q*len(sp.H) > 1<<8 || tr.steps*q*len(sp.H) > 1<<12 {
				return // a long trace: not run here
			}
			var out bytes.Buffer
			if err := tr.Run(&out); err != nil {
				return
			}
			lines := 0
			for sc := bufio.NewScanner(&out); sc.Scan(); lines++ {
				if !json.Valid(sc.Bytes()) {
					t.Fatalf("line %d is not JSON: %s", lines+1, sc.Bytes())
				}
			}
			if lines != tr.steps {
				t.Fatalf("%d lines for %d steps", lines, tr.steps)
			}
		})
	})
}
