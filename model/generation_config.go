package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/inputfile"
)

// The ids generation stops at, as transformers loads them: a checkpoint's
// generation_config.json, when it has one, is the model's generation config
// (GenerationConfig.from_pretrained), its eos_token_id replacing config.json's
// entirely; without the file, config.json's (GenerationConfig.from_model_config).

// eosIDs reads an eos_token_id: an int, a list of ints, null or absent.
// Each id must be one of the model's vocab tokens (transformers warns that
// a negative one is invalid; one past vocab_size can never be generated, so
// the file is not this model's); a list's repeats are dropped, its order
// kept: the list is searched at every generated token, and a stranger's
// file of a million ids made every generation and evaluation hang.
func eosIDs(raw json.RawMessage, vocab int) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var ids []int
	var one int
	if json.Unmarshal(raw, &one) == nil {
		ids = []int{one}
	} else if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf(`"eos_token_id" must be an int or a list of ints: %w`, err)
	}
	seen := make(map[int]bool, min(len(ids), vocab))
	kept := ids[:0]
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf(`"eos_token_id" %d is not a token id of this model (0 to vocab_size-1, %d)`, id, vocab-1)
		}
		if !seen[id] {
			seen[id] = true
			kept = append(kept, id)
		}
	}
	return kept, nil
}

// StopIDs are the ids HF's generate stops at: generation_config.json's
// eos_token_id when the checkpoint has that file (Llama-3.x Instruct's names
// <|eot_id|> there; none if it names none), else config.json's.
func (c *Config) StopIDs() []int {
	if c.HasGenerationConfig {
		return slices.Clone(c.GenerationEOS)
	}
	return slices.Clone(c.EOSTokenIDs)
}

// LoadGenerationEOS reads eos_token_id from dir's generation_config.json,
// where checkpoints name the tokens generation stops at (Llama-3.x's
// <|eot_id|> and <|eom_id|> are there, not in config.json), each one of the
// vocab ids 0 to vocab-1; found says whether the file is there (ids is nil
// when it names none).
func LoadGenerationEOS(dir string, vocab int) (ids []int, found bool, err error) {
	path := filepath.Join(dir, "generation_config.json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var r struct {
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if ids, err = eosIDs(r.EOSTokenID, vocab); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return ids, true, nil
}
