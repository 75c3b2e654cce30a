package tokenizer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// tekkenDir holds a small tokenizer in the layout of Ministral-3's
// tokenizer.json (Mistral's tekken BPE; scripts/make_tekken_fixture.py says
// what is real and what is made up) and the encodings HF's tokenizers makes
// of it (scripts/tekken_reference.js).
const tekkenDir = "testdata/tekken"

type tekkenRecord struct {
	Text               string   `json:"text"`
	Pieces             []string `json:"pieces"`
	IDs                []int    `json:"ids"`
	IDsWithSpecial     []int    `json:"ids_with_special"`
	Decoded            string   `json:"decoded"`
	DecodedSkipSpecial string   `json:"decoded_skip_special"`
}

// TestTekkenMatchesHF checks the tekken split, encoding with and without
// <s>, and decoding against HF's tokenizers on the public corpus and
// strings aimed at tekken's regex.
func TestTekkenMatchesHF(t *testing.T) {
	tk, err := Load(tekkenDir)
	if err != nil {
		t.Fatal(err)
	}
	if bos, ok := tk.BOS(); !ok || bos != 1 || tk.EOS() != 2 || tk.PadID() != 11 {
		t.Fatalf("BOS %d (%v), EOS %d, pad %d; want Mistral's 1, 2, 11", bos, ok, tk.EOS(), tk.PadID())
	}
	recs := fixture.ReadJSONL[tekkenRecord](t, filepath.Join(tekkenDir, "reference.jsonl"))
	if len(recs) < 300 {
		t.Fatalf("%d records, want the corpus and the tekken strings", len(recs))
	}
	failures := 0
	for _, r := range recs {
		pieces := tekkenPieces(tk, r.Text)
		got, gotSpecial := tk.Encode(r.Text, false), tk.Encode(r.Text, true)
		dec, decSkip := tk.Decode(r.IDs, false), tk.Decode(r.IDs, true)
		if !slices.Equal(pieces, r.Pieces) || !slices.Equal(got, r.IDs) || !slices.Equal(gotSpecial, r.IDsWithSpecial) ||
			dec != r.Decoded || decSkip != r.DecodedSkipSpecial {
			failures++
			if failures <= 10 {
				t.Errorf("%q:\n pieces %q\n  want  %q\n ids %v / %v\n want %v / %v\n decoded %q / %q, want %q / %q",
					r.Text, pieces, r.Pieces, got, gotSpecial, r.IDs, r.IDsWithSpecial, dec, decSkip, r.Decoded, r.DecodedSkipSpecial)
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d records differ from HF's tokenizers", failures, len(recs))
	}
}

// tekkenPieces is the pre-tokenizer's output as HF's preTokenizeString
// returns it (byte-level encoded pieces), for text without added tokens.
func tekkenPieces(tk *Tokenizer, text string) []string {
	pieces := []string{}
	for i := 0; i < len(text); {
		j := tk.split.next(text, i)
		pieces = append(pieces, byteLevelEncode(text[i:j]))
		i = j
	}
	return pieces
}

type tekkenChatRecord struct {
	Name                string    `json:"name"`
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	Rendered            *string   `json:"rendered"`
	Error               string    `json:"error"`
}

// TestTekkenChatTemplateMatchesHF renders Ministral-3's chat template
// (testdata/tekken/chat_template.jinja) as transformers 4.51's Jinja
// environment does (scripts/tekken_chat_reference.py): the SQuAD
// conversation with and without its answer, the default system prompt,
// several turns, template-like text in a message, and the template's own
// errors (roles not alternating, an empty assistant turn).
func TestTekkenChatTemplateMatchesHF(t *testing.T) {
	tk, err := Load(tekkenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fixture.ReadJSONL[tekkenChatRecord](t, filepath.Join(tekkenDir, "chat.jsonl")) {
		t.Run(r.Name, func(t *testing.T) {
			got, err := tk.RenderChat(r.Messages, ChatOptions{AddGenerationPrompt: r.AddGenerationPrompt})
			switch {
			case r.Rendered == nil && err == nil:
				t.Fatalf("rendered %q, want the template's error %q", got, r.Error)
			case r.Rendered == nil && !strings.Contains(err.Error(), r.Error):
				t.Fatalf("error %v, want one saying %q", err, r.Error)
			case r.Rendered != nil && err != nil:
				t.Fatal(err)
			case r.Rendered != nil && got != *r.Rendered:
				t.Fatalf("rendered\n%q\nwant\n%q", got, *r.Rendered)
			}
		})
	}
}
