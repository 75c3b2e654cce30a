package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGenerationConfigStops: the eos ids of generation_config.json (where
// Llama-3.x Instruct names <|eot_id|>) end a generation in place of
// config.json's, as transformers 4.51 loads them (GenerationConfig.from_pretrained
// when the file is there, checked with the real library: {"eos_token_id": 9}
// stops at 9 alone, null at none); a malformed file is an error naming it,
// and so is one whose ids are not the model's.
func TestGenerationConfigStops(t *testing.T) {
	src := filepath.Join("testdata", "opt", "opt-tiny")
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		abs, err := filepath.Abs(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (*Model, error) { return Load(dir) }
	m, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.StopIDs(); !slices.Equal(got, m.EOSTokenIDs) {
		t.Errorf("without generation_config.json: stops %v, want config.json's %v", got, m.EOSTokenIDs)
	}
	m.Free()
	gen := filepath.Join(dir, "generation_config.json")
	for _, c := range []struct{ text, want string }{
		{`{"eos_token_id": [2, 7]}`, "[2 7]"},
		{`{"eos_token_id": 9}`, "[9]"},
		{`{"eos_token_id": null}`, "[]"},
		{`{"bos_token_id": 1}`, "[]"},
		{`{"eos_token_id": "x"}`, `generation_config.json: "eos_token_id" must be an int or a list of ints`},
		{`{"eos_token_id": [2,`, "generation_config.json: unexpected end of JSON input"},
		// Repeats are dropped (the list is searched at every generated
		// token: a million ids made generation hang); an id no token of the
		// 512-token vocabulary has, or a negative one, is refused.
		{`{"eos_token_id": [7, 2, 7, 2]}`, "[7 2]"},
		{`{"eos_token_id": 512}`, `generation_config.json: "eos_token_id" 512 is not a token id of this model (0 to vocab_size-1, 511)`},
		{`{"eos_token_id": [2, -1]}`, `generation_config.json: "eos_token_id" -1 is not a token id`},
	} {
		if err := os.WriteFile(gen, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := load()
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.text, err, c.want)
			}
		case !strings.HasPrefix(c.want, "["):
			t.Errorf("%s: loaded (stops %v), want an error %q", c.text, m.StopIDs(), c.want)
		case fmt.Sprint(m.StopIDs()) != c.want:
			t.Errorf("%s: stops %v, want %s", c.text, m.StopIDs(), c.want)
		}
		if m != nil {
			m.Free()
		}
	}
}

// TestGenerateRefuses: what Generate cannot continue is an error before
// anything runs: a stop id outside the vocabulary (the first one, fed to
// the rows that have stopped, panicked in the embedding lookup) and a
// right-padded row (continued from its padding: other tokens than the same
// prompt's left-padded, without a word).
func TestGenerateRefuses(t *testing.T) {
	m, err := NewRandom(tinyConfig("LlamaForCausalLM"), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	left := Input{B: 2, T: 3, Tokens: []int{0, 5, 9, 4, 7, 8}, Mask: []int{0, 1, 1, 1, 1, 1}}
	right := Input{B: 2, T: 3, Tokens: []int{5, 9, 0, 4, 7, 8}, Mask: []int{1, 1, 0, 1, 1, 1}}
	for _, tc := range []struct {
		name string
		in   Input
		stop []int
		want string // "": generates
	}{
		{"left-padded", left, []int{3}, ""},
		{"stop id past the vocabulary", left, []int{m.VocabSize, 3}, fmt.Sprintf("stop token id %d is outside the vocabulary", m.VocabSize)},
		{"negative stop id", left, []int{3, -1}, "stop token id -1 is outside"},
		{"right-padded", right, []int{3}, "row 0 ends in padding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Generate(tc.in, GenerateOptions{MaxNewTokens: 3, StopIDs: tc.stop})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
