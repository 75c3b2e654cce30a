package tokenizer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
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

// manyAddedLengths is the Qwen3 fixture's tokenizer with 1,500 more added
// tokens "x a…a y" of as many lengths, all beginning with "x": the shape
// of a tokenizer.json that made encoding quadratic when every position
// tried every distinct added-token length.
func manyAddedLengths(tb testing.TB) *Tokenizer {
	raw, err := os.ReadFile("testdata/qwen3-tiny/tokenizer.json")
	if err != nil {
		tb.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		tb.Fatal(err)
	}
	added := f["added_tokens"].([]any)
	for k := 1; k <= 1500; k++ {
		added = append(added, map[string]any{"id": 2000 + k, "content": "x" + strings.Repeat("a", k) + "y", "special": true})
	}
	f["added_tokens"] = added
	raw, _ = json.Marshal(f)
	tok, err := parseTokenizerJSON(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// longestAdded finds the longest added token at a position, as a search
// over every added token does (HF's Aho-Corasick, leftmost-longest).
func TestLongestAdded(t *testing.T) {
	tok := manyAddedLengths(t)
	brute := func(s string) int {
		best := 0
		for content := range tok.added {
			if len(content) > best && strings.HasPrefix(s, content) {
				best = len(content)
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteByte("xay<|"[rng.IntN(5)])
		}
		s := b.String()
		if got, want := tok.longestAdded(s), brute(s); got != want {
			t.Fatalf("longestAdded(%q) = %d, want %d", s, got, want)
		}
	}
	x := int(tok.byteIDs['x'])
	if got, want := tok.Encode("xxaay", false), []int{x, 2002}; !slices.Equal(got, want) {
		t.Errorf("Encode(xxaay) = %v, want %v", got, want)
	}
}

// Oniguruma's (?i:'s|...) folds U+017F (ſ) to s, so Llama-3's and Qwen's
// pre-tokenizers split "'ſe" as "'ſ", "e" (libonig 6.9.8 and Python's
// regex module agree).
func TestContractionLongS(t *testing.T) {
	for _, sp := range []splitter{{maxDigits: 3}, {maxDigits: 1}} {
		s := "'\u017fe"
		if j := sp.next(s, 0); s[:j] != "'\u017f" {
			t.Errorf("first piece of %q: %q, want %q", s, s[:j], "'\u017f")
		}
	}
}
