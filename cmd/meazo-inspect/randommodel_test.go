package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/model"
)

// TestRandomModelCommand writes a random model that loads, and refuses a
// standard deviation that would make its weights NaN or meaningless.
func TestRandomModelCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"architectures":["Qwen3ForCausalLM"],"vocab_size":64,"hidden_size":32,"intermediate_size":64,
		"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"rms_norm_eps":1e-6,
		"rope_theta":1000000,"tie_word_embeddings":true}`), 0o644)
	out := filepath.Join(dir, "m")
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", out}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := model.Load(out); err != nil {
		t.Errorf("the random model does not load: %v", err)
	}
	// A directory that holds a model already (here: the config's own) is
	// refused, untouched.
	for _, to := range []string{dir, out} {
		before, _ := os.ReadFile(filepath.Join(to, "config.json"))
		err := commands.Run("random-model", []string{"--config", cfg, "--out", to, "--seed", "2"}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "already holds a model (config.json)") {
			t.Errorf("--out %s: %v", to, err)
		}
		if after, _ := os.ReadFile(filepath.Join(to, "config.json")); string(after) != string(before) {
			t.Errorf("--out %s: config.json changed", to)
		}
	}
	for _, std := range []string{"NaN", "Inf", "-0.02", "0"} {
		err := commands.Run("random-model", []string{"--config", cfg, "--out", filepath.Join(dir, "bad"), "--std", std}, nil, io.Discard)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--std must be positive and finite") {
			t.Errorf("--std %s: %v", std, err)
		}
	}
}
