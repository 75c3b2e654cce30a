package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFiles: the committed kernels, constants and header are what
// this program writes (run go generate ./noise after changing it).
func TestGeneratedFiles(t *testing.T) {
	for name, want := range files() {
		got, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("noise/%s is not what internal/asmgen writes: run go generate ./noise", name)
		}
	}
}

// TestInterleave: every instruction of every chain once, each chain's in
// its order; stagger delays the later chains.
func TestInterleave(t *testing.T) {
	a := chain{"a0", "a1", "a2", "a3"}
	b := chain{"b0", "b1", "b2", "b3"}
	tests := []struct {
		lag  float64
		want chain
	}{
		{0, chain{"a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"}},
		{0.5, chain{"a0", "a1", "a2", "b0", "a3", "b1", "b2", "b3"}},
		{1, chain{"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"}},
	}
	for _, tt := range tests {
		if got := stagger(tt.lag, a, b); !equal(got, tt.want) {
			t.Errorf("stagger(%g) = %v, want %v", tt.lag, got, tt.want)
		}
	}
}

func equal(a, b chain) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
