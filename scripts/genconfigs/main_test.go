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
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(files) {
		t.Errorf("configs/ has %d files, the generator makes %d: run go run ./scripts/genconfigs", n, len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("configs/%s is missing or stale: run go run ./scripts/genconfigs", name)
		}
	}
}

// TestOutDir: the one argument is the output directory; a flag or a second
// argument is refused (-h wrote every config into a directory named "-h").
func TestOutDir(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "": refused
	}{
		{nil, "configs"},
		{[]string{"/tmp/x"}, "/tmp/x"},
		{[]string{"-h"}, ""},
		{[]string{"--help"}, ""},
		{[]string{"a", "b"}, ""},
	} {
		got, err := outDir(c.args)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%q: %q, %v; want %q", c.args, got, err, c.want)
		}
	}
}
