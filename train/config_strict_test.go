package train

import (
	"errors"
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
		{"an empty value", base + "optimizer:\n  lr:\n", nil, "c.yaml:7: optimizer.lr has no value"},
		{"a null value", base + "optimizer:\n  lr: ~\n", nil, "c.yaml:7: optimizer.lr has no value"},
		{"null written out", base + "  validation: null\n", nil, "c.yaml:6: task.validation has no value"},
		{"an empty list key", base + "adapter:\n  targets:\n", nil, "c.yaml:7: adapter.targets has no value"},
		{"an empty section", base + "train:\n", nil, "c.yaml:6: train has no value"},
		{"a second document", base + "---\noptimizer:\n  lr: 5\n", nil, `c.yaml:6: a second YAML document starts ("---")`},
		{"not a mapping", "- model\n- task\n", nil, "want a mapping of sections"},
		{"--set without a number", base, []string{"optimizer.lr="}, `--set optimizer.lr: want a number, got ""`},
		// A glob that starts with * is a YAML alias: the error says to quote it.
		{"a glob starting with * in a list", base + "adapter:\n  exclude: [model.layers.0.*, *norm*]\n", nil, `line 7: did not find expected alphabetic or numeric character (YAML reads a value that starts with * as an alias: quote a glob that does`},
		{"a glob starting with * in a block list", base + "adapter:\n  exclude:\n    - *norm*\n", nil, `quote a glob that does`},
		{"--set a glob starting with *", base, []string{"adapter.exclude=[*]"}, `--set adapter.exclude: yaml: did not find expected alphabetic or numeric character (YAML reads a value that starts with * as an alias: quote a glob that does, e.g. [model.layers.*, "*norm*"])`},
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

// TestNotAConfigFile: a file that is clearly no config (Markdown, Python,
// binary) is said to be one, not answered with its YAML error; a Markdown
// list of "- **bold**" items does not get the hint about globs starting
// with *, which is for the errors such a glob gives.
func TestNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, want string
	}{
		{"README.md", "# meazo\n\nIt trains:\n\n- **fast**: yes\n- *slow*\n", "(a Markdown file)"},
		{"x.py", "import os\nprint(1)\n", "(a Python file)"},
		{"model.safetensors", "\x08\x00\x00\x00{\"a\": 1}\x00*, *", "(a binary file)"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, nil)
		if want := "config " + p + ": does not look like a YAML config " + c.want; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "alias") {
			t.Errorf("%s: error %v, want one saying %q and not about aliases", c.name, err, want)
		}
	}
	// A YAML file whose error is not an alias's gets no alias hint, though
	// a value-like * is in it (in a comment).
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("model:\n  path: m: x\n# see: *notes*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, nil); err == nil || strings.Contains(err.Error(), "alias") || strings.Contains(err.Error(), "does not look like") {
		t.Errorf("c.yaml: error %v, want its YAML error alone", err)
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

// TestConfigErrorsNameTheLine: an unknown key, a value of the wrong type and
// a value the checks refuse are each reported at the file's line where the
// key is written (config F:LINE:), and a key written with the name HF's
// Trainer or MeZO's scripts give it is pointed to this config's.
func TestConfigErrorsNameTheLine(t *testing.T) {
	const base = "model:\n  path: m\ntask:\n  name: sst2\n  train: t.tsv\n"
	const pets = "model:\n  path: m\ntask:\n  name: pets\n  train: t.parquet\nadapter:\n  targets: [query, value]\n"
	dir := t.TempDir()
	for _, c := range []struct {
		name, yaml string
		set        []string
		want       string
	}{
		{"unknown key", base + "optimizer:\n  name: meazo\n  lrr: 1e-3\n", nil, `F:8: unknown key "optimizer.lrr" (did you mean "optimizer.lr"?)`},
		{"unknown section", base + "\noptimiser:\n  lr: 1\n", nil, `F:7: unknown key "optimiser"`},
		{"wrong type", base + "train:\n  steps: 2.5\n", nil, "F:7: train.steps: want a whole number, got 2.5"},
		{"refused value", base + "optimizer:\n  q: 1\n  lr: -1\n", nil, "F:8: optimizer.lr must be positive and finite, got -1"},
		{"refused by --set", base, []string{"optimizer.lr=-1"}, "--set optimizer.lr: must be positive"},
		{"Trainer's name", base + "optimizer:\n  learning_rate: 1e-3\n", nil, `F:7: unknown key "optimizer.learning_rate" (did you mean "optimizer.lr"? learning_rate is HF Trainer's or MeZO's name for it)`},
		{"Trainer's name at the top", base + "max_steps: 5\n", nil, `F:6: unknown key "max_steps" (did you mean "train.steps"?`},
		{"MeZO's name by --set", base, []string{"optimizer.zo_eps=1e-3"}, `--set optimizer.zo_eps: unknown key "optimizer.zo_eps" (did you mean "optimizer.eps"?`},
		// A refusal that writes its key with a colon ("adapter.layers: …")
		// is blamed on where the key was given all the same.
		{"refused value, key and colon", pets + "  layers: [1, 1]\n", nil, "F:8: adapter.layers: layer 1 is named twice"},
		{"refused by --set, key and colon", pets, []string{"adapter.layers=[1,1]"}, "--set adapter.layers: layer 1 is named twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, "F")
			if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(f, c.set)
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), c.want) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
	for name, key := range trainerNames {
		if checkKey(key, keys()) != nil {
			t.Errorf("trainerNames: %s points to %s, not a key", name, key)
		}
	}
}

// TestOverrideErrorForm: every fault of a --set override reads "--set KEY:
// PROBLEM", the problem without the key again, whichever check finds it
// (the split, the key, the value's type, YAML, Validate); an override
// that has no key names the whole of it, quoted.
func TestOverrideErrorForm(t *testing.T) {
	const base = "model:\n  path: m\ntask:\n  name: sst2\n  train: t.tsv\n"
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ set, want string }{
		{"train.steps", `--set "train.steps": want key=value, e.g. --set optimizer.lr=2e-4`},
		{" =5", `--set " =5": want key=value, e.g. --set optimizer.lr=2e-4`},
		{"train.stepz=5", `--set train.stepz: unknown key "train.stepz" (did you mean "train.steps"?)`},
		{"train=5", `--set train: "train" is a section: set one of its keys (e.g. train.steps=…), not the section`},
		{"lr=1", `--set lr: unknown key "lr" (did you mean "optimizer.lr"? a key is its section and its name)`},
		{"batch_size=4", `--set batch_size: unknown key "batch_size" (did you mean "train.batch_size" or "eval.batch_size"? a key is its section and its name)`},
		{" train.steps =2.5", `--set train.steps: want a whole number, got 2.5`},
		{"eval.skip=maybe", `--set eval.skip: want true or false, got "maybe"`},
		{"train.steps=[1", `--set train.steps: yaml: line 1: did not find expected ',' or ']'`},
		{"train.batch_size=0", `--set train.batch_size: must be at least 1, got 0`},
		{"model.backend=gpu", `--set model.backend: "gpu": want auto, cpu or cuda (cuda: an NVIDIA GPU)`},
		{"optimizer.name=zo_sgd", `--set optimizer.name: "zo_sgd": want meazo, zo-sgd, zo-adam, radazo or fzoo (did you mean "zo-sgd"?)`},
		{"optimizer.name=adam", `--set optimizer.name: "adam": want meazo, zo-sgd, zo-adam, radazo or fzoo (did you mean "zo-adam"?)`},
		{"optimizer.name=SGD", `--set optimizer.name: "SGD": want meazo, zo-sgd, zo-adam, radazo or fzoo (did you mean "zo-sgd"?)`},
		// MeZO is ZO-SGD, not the nearest name (meazo).
		{"optimizer.name=mezo", `--set optimizer.name: "mezo": want meazo, zo-sgd, zo-adam, radazo or fzoo (MeZO's optimizer is zo-sgd; meazo is MEAZO)`},
		{"adapter.exclude=[lm_head.weight]", `--set adapter.exclude: [lm_head.weight]: chooses tensors of a full-parameter run (adapter.kind full), not of adapter.kind lora`},
	} {
		_, err := Load(f, []string{c.set})
		if err == nil || err.Error() != c.want {
			t.Errorf("--set %q: %v\nwant %s", c.set, err, c.want)
		}
		if oe := (*OverrideError)(nil); !errors.As(err, &oe) {
			t.Errorf("--set %q: %T, not an *OverrideError", c.set, err)
		}
	}
}

// TestMissingConfigSuggestsNearest: a config file that is not there is
// answered with the file of its directory a few letters away, if any.
func TestMissingConfigSuggestsNearest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "qwen06b_sst2_lora_meazo.yaml"), []byte("model: {path: m}\n"), 0o644)
	for _, c := range []struct{ name, want string }{
		{"qwen06b_sst2_lora_mezo.yaml", " (did you mean " + filepath.Join(dir, "qwen06b_sst2_lora_meazo.yaml") + "?)"},
		{"qwen0.6b_sst2_lora_meazo.yml", " (did you mean " + filepath.Join(dir, "qwen06b_sst2_lora_meazo.yaml") + "?)"},
		{"llama1b_squad_prompt_fzoo.yaml", ""},
	} {
		_, err := Load(filepath.Join(dir, c.name), nil)
		if err == nil || !strings.HasSuffix(err.Error(), "no such file or directory"+c.want) {
			t.Errorf("%s: %v, want it to end %q", c.name, err, "no such file or directory"+c.want)
		}
	}
}
