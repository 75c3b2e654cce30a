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
func eosIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if json.Unmarshal(raw, &one) == nil {
		return []int{one}, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf(`"eos_token_id" must be an int or a list of ints: %w`, err)
	}
	return ids, nil
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
// <|eot_id|> and <|eom_id|> are there, not in config.json); found says
// whether the file is there (ids is nil when it names none).
func LoadGenerationEOS(dir string) (ids []int, found bool, err error) {
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
	if ids, err = eosIDs(r.EOSTokenID); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return ids, true, nil
}
