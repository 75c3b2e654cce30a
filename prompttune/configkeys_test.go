package prompttune

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigKeysAppliedOrRefused: a key of adapter_config.json that changes
// what the prompt computes is applied or refused, naming the file and the
// key; PEFT's other keys, and new ones left off, still load.
func TestConfigKeysAppliedOrRefused(t *testing.T) {
	m := tinyModel(t)
	p, err := FromText(m, fakeTok{}, 3, "Classify")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		v    any
		want string
	}{
		{"tokenizer_kwargs", map[string]any{"trust_remote_code": true}, ""},
		{"prompt_tuning_init", "RANDOM", ""},
		{"num_layers", 99, ""},
		{"modules_to_save", nil, ""},
		{"modules_to_save", []string{"classifier"}, `modules_to_save is ["classifier"], which this loader does not apply`},
		{"prefix_projection", true, "prefix_projection is true"},
	} {
		dir := t.TempDir()
		if err := p.Save(dir, m); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "adapter_config.json")
		b, _ := os.ReadFile(path)
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg[c.key] = c.v
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, m)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s = %v: %v, want %q", c.key, c.v, err, c.want)
		}
	}
}
