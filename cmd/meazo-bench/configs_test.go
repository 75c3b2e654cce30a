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

// TestBenchConfig: -model takes every built-in model by name, hub id or
// short name, a config.json or a directory holding one; anything else is a
// usage error that lists the built-in models, given before a backend is
// opened or a weight drawn.
func TestBenchConfig(t *testing.T) {
	for _, p := range model.PublishedModels() {
		want, err := p.Config()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{p.Name, p.Repo, p.Short} {
			c, err := benchConfig(name)
			if err != nil || c.Architecture != want.Architecture || c.NumLayers != want.NumLayers || c.HiddenSize != want.HiddenSize {
				t.Errorf("-model %s: %v, %v; want %s's config", name, c, err, p.Repo)
			}
		}
	}
	dir := t.TempDir()
	cfg := `{"architectures": ["OPTForCausalLM"], "vocab_size": 64, "hidden_size": 32, "ffn_dim": 48,
		"num_hidden_layers": 3, "num_attention_heads": 4, "max_position_embeddings": 20}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, "config.json")} {
		if c, err := benchConfig(path); err != nil || c.NumLayers != 3 {
			t.Errorf("-model %s: %v, %v", path, c, err)
		}
	}

	// -backend cuda: a backend that exists (a misspelt one is itself a usage
	// error, found first) and fails to open on a machine without a GPU.
	for _, args := range [][]string{
		{"zostep", "-model", "qwen3-9b"},
		{"forward", "-model", "opt-1.3", "-backend", "cuda"},
		{"fullstep", "-model", filepath.Join(dir, "missing"), "-backend", "cuda"},
	} {
		err := modes.Run(args[0], args[1:], nil, io.Discard)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "is not built in") {
			t.Errorf("%v: %v, want a usage error naming the built-in models", args, err)
			continue
		}
		for _, p := range model.PublishedModels() {
			if !strings.Contains(err.Error(), p.Name) || !strings.Contains(err.Error(), p.Short) {
				t.Errorf("%v: %q does not name %s (%s)", args, err, p.Name, p.Short)
			}
		}
	}
}
