package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzScore feeds arbitrary input to meazo-eval score's SQuAD and ROUGE
// readers (a stranger's JSON Lines file): an error or scores, never a
// panic, a hang or gigabytes. Where it scores, every output line is JSON
// and every score lies in [0, 1] (exact match and F1 in percent: [0,
// 100]). (Its seeds run in every go test; make fuzz fuzzes it.)
func FuzzScore(f *testing.F) {
	for _, s := range []string{
		`{"prediction": "Denver Broncos", "ground_truths": ["Denver Broncos", "the Broncos"]}` + "\n",
		`{"prediction": "", "ground_truths": [""]}` + "\n" + `{"prediction": "a an the", "ground_truths": ["The!"]}`,
		`{"prediction": "x", "ground_truths": [null]}`,
		`{"prediction": "\ud800", "ground_truths": ["\udc00"]}`,
		`{"prediction": "The cat sat.\nOn the mat.", "reference": "A cat sat on the mat.\n."}` + "\n",
		`{"prediction": "running runs ran", "reference": "runner running"}` + "\n\n\n" + `{"prediction": "", "reference": ""}`,
		"\ufeff" + `{"prediction": "x", "reference": "x", "extra": 1}`,
		`{"prediction": 1, "reference": {}}`,
		"",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, stem bool) {
		fuzzguard.Run(func() {
			var out bytes.Buffer
			if err := scoreSquad(bytes.NewReader(input), "in.jsonl", &out); err == nil {
				checkScoreLines(t, out.Bytes(), 100, "exact_match", "f1")
			}
			out.Reset()
			if err := scoreRouge(bytes.NewReader(input), "in.jsonl", stem, &out); err == nil {
				checkScoreLines(t, out.Bytes(), 1, "rouge1", "rouge2", "rougeL", "rougeLsum")
			}
		})
	})
}

// checkScoreLines fails t unless each line of out is a JSON object whose
// keys' values (numbers, or objects of numbers) lie in [0, top].
func checkScoreLines(t *testing.T, out []byte, top float64, keys ...string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("output line %d is not a JSON object: %v: %s", lines, err, sc.Bytes())
		}
		for _, k := range keys {
			var v float64
			if json.Unmarshal(rec[k], &v) != nil { // ROUGE's: precision, recall and F-measure
				var prf map[string]float64
				if err := json.Unmarshal(rec[k], &prf); err != nil || len(prf) == 0 {
					t.Fatalf("output line %d: %s is %s", lines, k, rec[k])
				}
				for name, x := range prf {
					if !(x >= 0 && x <= top) || math.IsNaN(x) {
						t.Fatalf("output line %d: %s.%s = %v, outside [0, %g]", lines, k, name, x, top)
					}
				}
				continue
			}
			if !(v >= 0 && v <= top) {
				t.Fatalf("output line %d: %s = %v, outside [0, %g]", lines, k, v, top)
			}
		}
	}
	if lines < 2 { // at least one score and the aggregate
		t.Fatalf("scored with %d output lines", lines)
	}
}
