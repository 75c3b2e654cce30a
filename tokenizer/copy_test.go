package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCopyFiles copies a tokenizer, byte for byte, that then encodes as the
// original; it refuses to write over a tokenizer file, or to copy what does
// not load, and then writes nothing.
func TestCopyFiles(t *testing.T) {
	from := t.TempDir()
	files := map[string]string{
		"tokenizer.json": `{"added_tokens":[{"id":5,"content":"<s>","special":true}],"normalizer":null,
			"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + jsonString(llama3SplitRegex) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},"post_processor":null,
			"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"c":4},"merges":["a b"]}}`,
		"tokenizer_config.json": `{"bos_token":"<s>","eos_token":"<s>"}`,
		"chat_template.jinja":   `{% for m in messages %}{{ m.content }}{% endfor %}`,
		"tokenizer.model":       "a SentencePiece model, which transformers may read", // copied, not read
	}
	for name, body := range files {
		os.WriteFile(filepath.Join(from, name), []byte(body), 0o644)
	}
	to := filepath.Join(t.TempDir(), "m")
	if _, err := CopyFiles(from, to); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(to, name)); err != nil || string(b) != body {
			t.Errorf("%s: copied %q, %v", name, b, err)
		}
	}
	a, _ := Load(from)
	b, err := Load(to)
	if err != nil {
		t.Fatalf("the copy does not load: %v", err)
	}
	if x, y := a.Encode("ab c", false), b.Encode("ab c", false); len(x) == 0 || !slices.Equal(x, y) {
		t.Errorf("the copy encodes as %v, the original as %v", y, x)
	}
	// A copy onto a tokenizer file: refused, nothing written.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "tokenizer_config.json"), []byte("{}"), 0o644)
	if _, err := CopyFiles(from, other); err == nil || !strings.Contains(err.Error(), "already holds tokenizer_config.json") {
		t.Errorf("copy onto an existing tokenizer_config.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "tokenizer.json")); err == nil {
		t.Error("a refused copy wrote tokenizer.json")
	}
	// A directory without a tokenizer: Load's error, nothing made.
	x := filepath.Join(t.TempDir(), "x")
	if _, err := CopyFiles(t.TempDir(), x); err == nil {
		t.Error("copied from a directory without a tokenizer")
	}
	if _, err := os.Stat(x); err == nil {
		t.Error("a failed copy made its target directory")
	}
}

// TestCopyFilesGPT2: OPT's tokenizer is vocab.json and merges.txt (no
// tokenizer.json); a copy carries them, and encodes as the original. Before,
// only tokenizer_config.json was copied: a directory without a tokenizer.
func TestCopyFilesGPT2(t *testing.T) {
	from := gpt2Dir(t, "#version: 0.2\nh e\nt he\nĠ t\nĠt he\n")
	to := filepath.Join(t.TempDir(), "m")
	if _, err := CopyFiles(from, to); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vocab.json", "merges.txt", "tokenizer_config.json"} {
		a, _ := os.ReadFile(filepath.Join(from, name))
		if b, err := os.ReadFile(filepath.Join(to, name)); err != nil || !slices.Equal(a, b) {
			t.Errorf("%s: not copied as it is (%v)", name, err)
		}
	}
	a, _ := Load(from)
	b, err := Load(to)
	if err != nil {
		t.Fatalf("the copy does not load: %v", err)
	}
	if x, y := a.Encode("the theme", true), b.Encode("the theme", true); len(x) == 0 || !slices.Equal(x, y) {
		t.Errorf("the copy encodes as %v, the original as %v", y, x)
	}
}
