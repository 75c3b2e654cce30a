package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The fixtures live outside the repository, in the folder MEAZO_SHARED names.
func sharedDir(t testing.TB) string {
	dir := os.Getenv("MEAZO_SHARED")
	if dir == "" {
		t.Skip("MEAZO_SHARED is not set; it must name the shared fixtures folder (e.g. MEAZO_SHARED=/work/shared)")
	}
	return dir
}

func fixturePath(t testing.TB, parts ...string) string {
	return filepath.Join(append([]string{sharedDir(t), "fixtures", "tokenizers"}, parts...)...)
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

// readJSONL decodes every line of a JSON Lines fixture into a new T.
func readJSONL[T any](t testing.TB, path string) []T {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no records", path)
	}
	return out
}

var models = []string{"llama3.2", "qwen3"}
