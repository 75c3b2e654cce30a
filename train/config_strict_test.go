package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigWrittenIsUsedOrRefused: what a config file says is used or
// refused with the file, the line and the key named, never replaced by a
// default: a key written without a value (empty or null), a second YAML
// document, a --set without a value for a number.
func TestConfigWrittenIsUsedOrRefused(t *testing.T) {
	const base = "model:\n  path: m\ntask:\n  name: sst2\n  train: t.tsv\n"
	for _, c := range []struct {
		name, yaml string
		set        []string
		want       string
	}{
		{"an empty value", base + "optimizer:\n  lr:\n", nil, "line 7: optimizer.lr has no value"},
		{"a null value", base + "optimizer:\n  lr: ~\n", nil, "line 7: optimizer.lr has no value"},
		{"null written out", base + "  validation: null\n", nil, "line 6: task.validation has no value"},
		{"an empty list key", base + "adapter:\n  targets:\n", nil, "line 7: adapter.targets has no value"},
		{"an empty section", base + "train:\n", nil, "line 6: train has no value"},
		{"a second document", base + "---\noptimizer:\n  lr: 5\n", nil, `line 6: a second YAML document starts ("---")`},
		{"not a mapping", "- model\n- task\n", nil, "want a mapping of sections"},
		{"--set without a number", base, []string{"optimizer.lr="}, `--set optimizer.lr: want a number, got ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p, c.set)
			if err == nil || !strings.Contains(err.Error(), c.want) || c.set == nil && !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want one naming %s and saying %q", err, p, c.want)
			}
		})
	}
	// What is written is used: an explicit empty string, a trailing "---".
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(base+"  validation: ''\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(p, nil); err != nil || c.Task.Validation != "" {
		t.Errorf("an empty string and a trailing ---: %v", err)
	}
}

// TestChoiceError: a setting with fixed choices names them, and the closest
// where the value is a likely typo of it.
func TestChoiceError(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"ful", `adapter.kind "ful": want lora, prompt or full (did you mean "full"?)`},
		{"LoRA", `adapter.kind "LoRA": want lora, prompt or full (did you mean "lora"?)`},
		{"adapter", `adapter.kind "adapter": want lora, prompt or full`},
	} {
		if got := choiceError("adapter.kind", tc.value, "lora", "prompt", "full").Error(); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.value, got, tc.want)
		}
	}
}
