package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
)

// GPT-2's tokenizer files: a checkpoint without tokenizer.json (OPT's, which
// ship vocab.json and merges.txt for transformers' GPT2Tokenizer) is read as
// the tokenizer.json transformers' GPT2Converter makes of them when it builds
// the fast tokenizer: a byte-level BPE over vocab.json with merges.txt's
// merges in order, ByteLevel pre-tokenization with GPT-2's pattern and no
// prefix space, the special tokens of tokenizer_config.json (and
// special_tokens_map.json) split out first, and, with add_bos_token, the BOS
// token before every sequence (OPT's "</s>"). Its encodings are those of the
// slow GPT2Tokenizer that MeZO loads (use_fast=False).

// gpt2Config is the part of tokenizer_config.json and special_tokens_map.json
// that GPT2Tokenizer reads besides the special-token names configFile has.
type gpt2Config struct {
	UnkToken       json.RawMessage `json:"unk_token"`
	BOSToken       json.RawMessage `json:"bos_token"`
	EOSToken       json.RawMessage `json:"eos_token"`
	PadToken       json.RawMessage `json:"pad_token"`
	AddBOSToken    bool            `json:"add_bos_token"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
}

// hasGPT2Files says whether dir holds vocab.json and merges.txt.
func hasGPT2Files(dir string) bool {
	return regularFile(filepath.Join(dir, "vocab.json")) && regularFile(filepath.Join(dir, "merges.txt"))
}

func regularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// gpt2TokenizerJSON reads dir's vocab.json, merges.txt, tokenizer_config.json
// and, if present, special_tokens_map.json, and returns the tokenizer.json
// GPT2Converter would write for them.
func gpt2TokenizerJSON(dir string) ([]byte, error) {
	read := func(name string) ([]byte, error) { return inputfile.ReadFile(filepath.Join(dir, name)) }
	vocabRaw, err := read("vocab.json")
	if err != nil {
		return nil, err
	}
	mergesRaw, err := read("merges.txt")
	if err != nil {
		return nil, err
	}
	var cfg gpt2Config
	// special_tokens_map.json first: tokenizer_config.json's keys win, as
	// from_pretrained merges them.
	for _, name := range []string{"special_tokens_map.json", "tokenizer_config.json"} {
		raw, err := read(name)
		if errors.Is(err, os.ErrNotExist) && name == "special_tokens_map.json" {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("%s: invalid JSON: %w", name, err)
		}
	}
	return gpt2Converted(vocabRaw, mergesRaw, cfg)
}

// gpt2Converted builds the tokenizer.json of GPT-2's files. merges.txt is
// read as GPT2Tokenizer reads it: its lines less the first (the
// "#version" header) and less the text after the last newline.
func gpt2Converted(vocabRaw, mergesRaw []byte, cfg gpt2Config) ([]byte, error) {
	var vocab map[string]int
	if err := json.Unmarshal(vocabRaw, &vocab); err != nil {
		return nil, fmt.Errorf("vocab.json: want an object of token ids: %w", err)
	}
	if cfg.AddPrefixSpace {
		return nil, errors.New("tokenizer_config.json: add_prefix_space true is not supported")
	}
	lines := strings.Split(string(mergesRaw), "\n")
	if len(lines) < 2 {
		return nil, errors.New("merges.txt: no merges after the header line")
	}
	lines = lines[1 : len(lines)-1]
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("merges.txt line %d: %s is not two tokens", i+2, clip.Quote(l))
		}
		lines[i] = f[0] + " " + f[1]
	}
	added, err := gpt2Specials(vocab, cfg)
	if err != nil {
		return nil, err
	}
	post := any(map[string]any{"type": "ByteLevel", "trim_offsets": false})
	if cfg.AddBOSToken {
		bos, _ := tokenName(cfg.BOSToken)
		if bos == "" {
			return nil, errors.New("tokenizer_config.json: add_bos_token without a bos_token")
		}
		post = map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": bos, "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}}}
	}
	return json.Marshal(map[string]any{
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": post,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": lines, "dropout": nil,
			"continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false},
	})
}

// gpt2Specials are the special tokens GPT2Tokenizer splits out of a text
// (unk, bos, eos, pad; each once), with their vocab.json ids.
func gpt2Specials(vocab map[string]int, cfg gpt2Config) ([]addedTokenJSON, error) {
	var added []addedTokenJSON
	seen := map[string]bool{}
	for _, f := range []struct {
		key string
		raw json.RawMessage
	}{{"unk_token", cfg.UnkToken}, {"bos_token", cfg.BOSToken}, {"eos_token", cfg.EOSToken}, {"pad_token", cfg.PadToken}} {
		name, err := tokenName(f.raw)
		if err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %s: %w", f.key, err)
		}
		if name == "" || seen[name] {
			continue
		}
		id, ok := vocab[name]
		if !ok {
			return nil, fmt.Errorf("tokenizer_config.json: %s %s is not in vocab.json (added tokens are not supported)", f.key, clip.Quote(name))
		}
		seen[name] = true
		added = append(added, addedTokenJSON{ID: id, Content: name, Special: true})
	}
	return added, nil
}
