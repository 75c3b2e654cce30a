package tokenizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/atomicfile"
)

// Files are the files Load reads from a model directory: tokenizer.json, or
// GPT-2's vocab.json and merges.txt where there is none (OPT's), and
// tokenizer_config.json; chat_template.jinja is optional.
var Files = []string{"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "chat_template.jinja"}

// companionFiles are tokenizer files transformers reads besides Files, where
// a model has them: tokenizer.model, the SentencePiece model that
// LlamaTokenizerFast converts anew when tokenizer_config.json sets
// add_prefix_space (Mistral-7B-Instruct-v0.3's does, and fails without it),
// and special_tokens_map.json.
var companionFiles = []string{"tokenizer.model", "special_tokens_map.json"}

// CopyFiles copies the tokenizer of the model directory from into the
// directory to (made if missing): the Files and companion files that from
// has, after checking that they load. It writes over nothing: a tokenizer
// file already in to is an error, and nothing is copied.
func CopyFiles(from, to string) (*Tokenizer, error) {
	tok, err := Load(from)
	if err != nil {
		return nil, err
	}
	names := append(slices.Clone(Files), companionFiles...)
	for _, name := range names {
		if _, err := os.Lstat(filepath.Join(to, name)); err == nil {
			return nil, fmt.Errorf("%s already holds %s: not written over", to, name)
		}
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return nil, err
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // optional: chat_template.jinja (Load found the template elsewhere, or none), the companions
		}
		if err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(to, name), b); err != nil {
			return nil, err
		}
	}
	return tok, nil
}
