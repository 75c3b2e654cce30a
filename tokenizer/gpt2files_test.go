package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// TestGPT2PreTokenizer: GPT-2's pattern splits text as the regex module
// splits it for transformers' GPT2Tokenizer (testdata made by
// scripts/make_gpt2_pretokenize_fixture.py: edge cases and 400 random
// strings of the characters the pattern tells apart).
func TestGPT2PreTokenizer(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "gpt2_pretokenize.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Pattern string
		Cases   []struct {
			Text   string
			Pieces []string
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Pattern != gpt2SplitRegex {
		t.Fatalf("the fixture's pattern %q is not gpt2SplitRegex %q", f.Pattern, gpt2SplitRegex)
	}
	p, bad := splitter{gpt2: true}, 0
	for _, c := range f.Cases {
		var got []string
		for i := 0; i < len(c.Text); {
			j := p.next(c.Text, i)
			got = append(got, c.Text[i:j])
			i = j
		}
		if !slices.Equal(got, c.Pieces) && !(len(got) == 0 && len(c.Pieces) == 0) {
			if bad++; bad <= 5 {
				t.Errorf("%q: pieces %q, want %q", c.Text, got, c.Pieces)
			}
		}
	}
	t.Logf("%d strings, %d mismatches", len(f.Cases), bad)
}

// gpt2Dir writes a tiny OPT-style tokenizer: vocab.json with fairseq's
// specials first (<s> 0, <pad> 1, </s> 2, <unk> 3) and every byte, a few
// merges, and OPT's tokenizer_config.json (</s> as BOS, EOS and UNK,
// add_bos_token). merges is merges.txt's text.
func gpt2Dir(t *testing.T, merges string) string {
	vocab := map[string]int{"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
	for b := range 256 {
		vocab[string(byteToRune[b])] = 4 + b
	}
	for _, tok := range []string{"he", "the", "Ġt", "Ġthe"} {
		vocab[tok] = len(vocab)
	}
	dir := t.TempDir()
	v, _ := json.Marshal(vocab)
	tok := func(s string) map[string]any {
		return map[string]any{"content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "__type": "AddedToken"}
	}
	cfg, _ := json.Marshal(map[string]any{"errors": "replace", "unk_token": tok("</s>"), "bos_token": tok("</s>"), "eos_token": tok("</s>"),
		"pad_token": tok("<pad>"), "add_prefix_space": false, "add_bos_token": true})
	for name, b := range map[string][]byte{"vocab.json": v, "merges.txt": []byte(merges), "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGPT2Files: a directory with vocab.json and merges.txt (OPT's files)
// encodes as GPT2Tokenizer does: OPT's BOS </s> first, the special tokens
// split out, merges by rank, merges.txt's header line and anything after its
// last newline not merges.
func TestGPT2Files(t *testing.T) {
	tk, err := Load(gpt2Dir(t, "#version: 0.2\nh e\nt he\nĠ t\nĠt he\n"))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int { i, _ := tk.TokenID(s); return i }
	// "the": t h e → t he → the. " the": Ġ t h e → Ġ t he (rank 0) → Ġ the
	// (rank 1, before Ġ t): "Ġthe" is never formed, as GPT2Tokenizer's bpe
	// would not form it either.
	want := []int{2, id("the"), id("Ġ"), id("the"), 2, id("x"), 1}
	if got := tk.Encode("the the</s>x<pad>", true); !slices.Equal(got, want) {
		t.Errorf("Encode: %v, want %v", got, want)
	}
	if got := tk.Encode("the", false); !slices.Equal(got, []int{id("the")}) {
		t.Errorf("Encode without special tokens: %v", got)
	}
	if bos, ok := tk.BOS(); !ok || bos != 2 || tk.EOS() != 2 || tk.PadID() != 1 {
		t.Errorf("BOS %d (%v), EOS %d, pad %d; want 2, 2, 1", bos, ok, tk.EOS(), tk.PadID())
	}
	if got := tk.Decode(tk.Encode("the the x", true), true); got != "the the x" {
		t.Errorf("Decode: %q", got)
	}
	// The last line without a newline is not a merge, as GPT2Tokenizer reads it.
	tk2, err := Load(gpt2Dir(t, "#version: 0.2\nh e\nt he"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk2.Encode("the", false); !slices.Equal(got, []int{id("t"), id("he")}) {
		t.Errorf("merges.txt without a final newline: %v, want t he", got)
	}
	for merges, wantErr := range map[string]string{
		"#version: 0.2\nh e f\n": "merges.txt line 2",
		"#version: 0.2\nq z\n":   "not in model.vocab",
		"":                       "merges.txt",
	} {
		if _, err := Load(gpt2Dir(t, merges)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("merges %q: error %v, want one saying %s", merges, err, wantErr)
		}
	}
	// One of the two files alone is named, not the tokenizer.json that is
	// missing too.
	for _, gone := range []string{"merges.txt", "vocab.json"} {
		dir := gpt2Dir(t, "#version: 0.2\nh e\n")
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "without its "+gone) {
			t.Errorf("no %s: error %v, want one naming it", gone, err)
		}
	}
}

// FuzzGPT2Files: GPT-2's files' reader, then encoding with what it
// accepted: an error or a tokenizer, never a panic, a hang or gigabytes.
func FuzzGPT2Files(f *testing.F) {
	f.Add([]byte(`{"<s>":0,"</s>":1,"a":2,"b":3,"ab":4,"Ġ":5}`), []byte("#version: 0.2\na b\n"),
		[]byte(`{"bos_token":"</s>","eos_token":"</s>","add_bos_token":true}`), "ab ab</s> a")
	f.Add([]byte(`{"a":0}`), []byte("\n\n"), []byte(`{"eos_token":{"content":"a"}}`), "aaa")
	f.Fuzz(func(t *testing.T, vocab, merges, cfg []byte, text string) {
		fuzzguard.Run(func() {
			var c gpt2Config
			if json.Unmarshal(cfg, &c) != nil {
				return
			}
			raw, err := gpt2Converted(vocab, merges, c)
			if err != nil {
				return
			}
			tk, err := parseTokenizerJSON(raw)
			if err != nil {
				return
			}
			tk.Decode(tk.Encode(text, true), false)
		})
	})
}

// TestGPT2FilesMatchHF: GPT-2-style files made from a real byte-level BPE
// (the shared Qwen3 tokenizer.json's vocabulary and 151,387 merges, with
// OPT's four special tokens appended and OPT's tokenizer_config.json)
// encode as transformers' slow GPT2Tokenizer encodes them, id for id, on the
// shared corpus, MeZO's SST-2 texts and special tokens inside text
// (testdata made by scripts/make_gpt2_tokenizer_fixture.py).
func TestGPT2FilesMatchHF(t *testing.T) {
	src := filepath.Join(fixture.Dir(t, "fixtures", "tokenizers", "qwen3"), "tokenizer.json")
	raw, err := os.ReadFile(filepath.Join("testdata", "gpt2_hf_ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		SourceSHA256 string `json:"source_sha256"`
		Specials     map[string]int
		Cases        []struct {
			Text string
			IDs  []int
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	dir, specials := gpt2FilesFrom(t, src, f.SourceSHA256)
	if !maps.Equal(specials, f.Specials) {
		t.Fatalf("special ids %v, the fixture's %v", specials, f.Specials)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, c := range f.Cases {
		if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDs) {
			if bad++; bad <= 5 {
				t.Errorf("%q: %v, GPT2Tokenizer %v", c.Text, got, c.IDs)
			}
		}
	}
	t.Logf("%d texts, %d differ from GPT2Tokenizer", len(f.Cases), bad)
}

// gpt2FilesFrom writes vocab.json, merges.txt and OPT's
// tokenizer_config.json made from the tokenizer.json at src as
// scripts/make_gpt2_tokenizer_fixture.py makes them, after checking src is
// the file the fixture was made from. It returns the folder and the
// special tokens' ids.
func gpt2FilesFrom(t *testing.T, src, sha string) (string, map[string]int) {
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != sha {
		t.Fatalf("%s is not the file the fixture was made from (sha256 %x, want %s)", src, sum, sha)
	}
	var tj struct {
		Model struct {
			Vocab  map[string]int
			Merges [][2]string
		}
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	vocab, specials, v := tj.Model.Vocab, map[string]int{}, len(tj.Model.Vocab)
	for i, s := range []string{"<s>", "<pad>", "</s>", "<unk>"} {
		vocab[s], specials[s] = v+i, v+i
	}
	var merges strings.Builder
	merges.WriteString("#version: 0.2\n")
	for _, m := range tj.Model.Merges {
		merges.WriteString(m[0] + " " + m[1] + "\n")
	}
	dir := gpt2Dir(t, merges.String())
	vb, err := json.Marshal(vocab)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vocab.json"), vb, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, specials
}
