package tokenizer

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// fixturePath is a tokenizer fixture's path in the shared fixtures
// (fixture.Dir: the test is skipped when MEAZO_SHARED is unset).
func fixturePath(t testing.TB, parts ...string) string {
	return filepath.Join(append([]string{fixture.Dir(t), "fixtures", "tokenizers"}, parts...)...)
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// model loads a fixture tokenizer once per test binary.
func model(t testing.TB, name string) *Tokenizer {
	dir := fixturePath(t, name)
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[name]; ok {
		return tk
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded[name] = tk
	return tk
}

var models = []string{"llama3.2", "qwen3"}
