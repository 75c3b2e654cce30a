package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigsAreCurrent checks configs/ is exactly what the generator writes.
func TestConfigsAreCurrent(t *testing.T) {
	files := Generate()
	dir := filepath.Join("..", "..", "configs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		t.Errorf("configs/ has %d files, the generator makes %d: run go run ./scripts/genconfigs", len(entries), len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("configs/%s is missing or stale: run go run ./scripts/genconfigs", name)
		}
	}
}
