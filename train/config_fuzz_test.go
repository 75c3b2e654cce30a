package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzConfigLoad: a config file and --set values, as Load reads them: a
// config or an error, never a panic, a hang or gigabytes (fuzzguard), and a
// config Load returns passes Validate. The seeds are the shipped configs, the
// demo's, and YAML that a careless or hostile file could hold (nulls, a
// second document, alias bombs, deep nesting). (Its seeds run in every go
// test; make fuzz fuzzes it.)
func FuzzConfigLoad(f *testing.F) {
	shipped, _ := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	for _, p := range shipped[:min(len(shipped), 4)] {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), "train.steps=5\noutput.dir=run x")
		}
	}
	const base = "model:\n  path: m\ntask:\n  name: sst2\n  train: t.tsv\n"
	for _, seed := range []struct{ yaml, set string }{
		{base, ""},
		{base + "optimizer:\n  lr:\n", ""},
		{base + "---\noptimizer:\n  lr: 5\n", ""},
		{base + "adapter:\n  targets: [q_proj, v_proj]\n  r: 2.5\n", "adapter.targets=[q_proj]"},
		{base + "train: &a {steps: 1}\neval: *a\n", "optimizer.lr=1e400"},
		{"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n", ""},
		{strings.Repeat("[", 5000) + strings.Repeat("]", 5000), ""},
		{base, "train.seed=-1\ntask.max_length=99999999999999999999\nmodel.path=\n=\nmodel"},
	} {
		f.Add(seed.yaml, seed.set)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml, set string) {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		var overrides []string
		if set != "" {
			overrides = strings.Split(set, "\n")
		}
		fuzzguard.Run(func() {
			c, err := Load(path, overrides)
			if err != nil {
				return
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Load returned a config that Validate refuses: %v", err)
			}
		})
	})
}
