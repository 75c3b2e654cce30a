package data

import (
	"slices"
	"strings"
	"testing"
)

// TestMeZOFormat: SST-2 in MeZO's template, as its encode_prompt builds it:
// the stripped sentence, " It was", the verbalizer; the tokenizer's
// special tokens; only the verbalizer's tokens supervised; both candidates
// for scoring, differing in the label word alone.
func TestMeZOFormat(t *testing.T) {
	e := &Encoder{Tok: fakeTok{}, Format: FormatMeZO}
	ex := Example{Task: SST2, ID: "7", Sentence: " it 's a charming journey . ", Label: 1}
	text, ids, err := e.EncodePrompt(ex)
	if err != nil {
		t.Fatal(err)
	}
	if text != "it 's a charming journey . It was" || ids[0] != 2 || len(ids) != 1+len(text) {
		t.Errorf("prompt %q, ids %v", text, ids)
	}
	enc, err := e.Encode(ex)
	if err != nil {
		t.Fatal(err)
	}
	want := "it 's a charming journey . It was great"
	if enc.Text != want || !slices.Equal(enc.IDs, fakeTok{}.Encode(want, true)) {
		t.Errorf("encoded %q %v", enc.Text, enc.IDs)
	}
	start, end := enc.Supervised()
	if got := string(toBytes(enc.IDs[start:end])); got != " great" || end != len(enc.IDs) || enc.PromptLen != start {
		t.Errorf("supervised %q [%d, %d), prompt length %d", got, start, end, enc.PromptLen)
	}
	lc, err := e.Candidates(ex)
	if err != nil {
		t.Fatal(err)
	}
	for c, word := range SST2LabelWords {
		sp := lc.Span[c]
		if got := string(toBytes(lc.Full[c].IDs[sp[0]:sp[1]])); !strings.HasSuffix(" "+word, got) || got == "" {
			t.Errorf("candidate %d spans %q", c, got)
		}
	}
	if _, err := e.Encode(Example{Task: SQuAD, ID: "q"}); err == nil || !strings.Contains(err.Error(), "format chat") {
		t.Errorf("SQuAD in format mezo: %v", err)
	}
	if _, err := ParseFormat("alpaca"); err == nil {
		t.Error("ParseFormat accepted alpaca")
	}
}

func toBytes(ids []int) []byte {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return b
}
