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

// The ids generation stops at: config.json's eos_token_id and
// generation_config.json's, which HF's generate reads.

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

// StopIDs are the ids HF's generate stops at: config.json's eos_token_id
// and generation_config.json's (which adds Llama-3.x Instruct's
// <|eot_id|>), each once.
func (c *Config) StopIDs() []int {
	stops := slices.Clone(c.EOSTokenIDs)
	for _, id := range c.GenerationEOS {
		if !slices.Contains(stops, id) {
			stops = append(stops, id)
		}
	}
	return stops
}

// LoadGenerationEOS reads eos_token_id from dir's generation_config.json,
// where checkpoints name the tokens generation stops at (Llama-3.x's
// <|eot_id|> and <|eom_id|> are there, not in config.json): nil when the
// file is absent or names none.
func LoadGenerationEOS(dir string) ([]int, error) {
	path := filepath.Join(dir, "generation_config.json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ids, err := eosIDs(r.EOSTokenID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ids, nil
}
