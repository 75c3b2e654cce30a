package tokenizer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

type corpusRecord struct {
	ID                 int    `json:"id"`
	Cat                string `json:"cat"`
	Text               string `json:"text"`
	IDs                []int  `json:"ids"`
	IDsWithSpecial     []int  `json:"ids_with_special"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
	DecodedHFDefault   string `json:"decoded_hf_default"`
}

// reportMismatches fails the test with the first few differences and the exact-match rate.
func checkIDs(t *testing.T, what string, got, want []int, bad *int) {
	t.Helper()
	if !slices.Equal(got, want) {
		*bad++
		if *bad <= 5 {
			t.Errorf("%s:\n got  %v\n want %v", what, got, want)
		}
	}
}

func TestPublicCorpus(t *testing.T) {
	for _, name := range models {
		t.Run(name, func(t *testing.T) {
			tk := model(t, name)
			recs := fixture.ReadJSONL[corpusRecord](t, fixturePath(t, "ref", "public", name+".corpus.jsonl"))
			bad := 0
			for _, r := range recs {
				what := fmt.Sprintf("corpus %d (%s) %q", r.ID, r.Cat, trunc(r.Text))
				checkIDs(t, what+" ids", tk.Encode(r.Text, false), r.IDs, &bad)
				checkIDs(t, what+" ids_with_special", tk.Encode(r.Text, true), r.IDsWithSpecial, &bad)
				for _, d := range []struct{ field, got, want string }{
					{"decoded", tk.Decode(r.IDs, false), r.Decoded},
					{"decoded_skip_special", tk.Decode(r.IDs, true), r.DecodedSkipSpecial},
					{"decoded_hf_default", tk.DecodeHF(r.IDs, true), r.DecodedHFDefault},
				} {
					if d.got != d.want {
						bad++
						t.Errorf("%s %s: got %q want %q", what, d.field, trunc(d.got), trunc(d.want))
					}
				}
			}
			t.Logf("%d strings, %d mismatches", len(recs), bad)
		})
	}
}

type idsRecord struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func TestLlamaCppVectors(t *testing.T) {
	for _, c := range []struct{ model, file string }{{"llama3.2", "llama-bpe.jsonl"}, {"qwen3", "qwen2.jsonl"}} {
		t.Run(c.file, func(t *testing.T) {
			tk := model(t, c.model)
			recs := fixture.ReadJSONL[idsRecord](t, fixturePath(t, "llamacpp", c.file))
			bad := 0
			for _, r := range recs {
				checkIDs(t, fmt.Sprintf("%q", trunc(r.Text)), tk.Encode(r.Text, false), r.IDs, &bad)
			}
			t.Logf("%d vectors, %d mismatches", len(recs), bad)
		})
	}
}

// TestStress encodes every vocabulary token as text and 60k random
// concatenations, and decodes the ids back: the text must come back as it was
// (after NFC for a model whose normalizer is NFC).
func TestStress(t *testing.T) {
	for _, name := range models {
		t.Run(name, func(t *testing.T) {
			tk := model(t, name)
			recs := fixture.ReadJSONL[idsRecord](t, fixturePath(t, "ref", "stress", name+".jsonl"))
			bad := 0
			for i, r := range recs {
				checkIDs(t, fmt.Sprintf("stress line %d %q", i+1, trunc(r.Text)), tk.Encode(r.Text, false), r.IDs, &bad)
				want := tk.normalize(r.Text) // NFC for Qwen3

				if got := tk.Decode(r.IDs, false); got != want {
					bad++
					t.Errorf("stress line %d: decode %q, want %q", i+1, trunc(got), trunc(want))
				}
			}
			t.Logf("%d strings, %d mismatches", len(recs), bad)
		})
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
