package train

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/strictyaml"
	"github.com/meazo-go/meazo/internal/suggest"

	"go.yaml.in/yaml/v3"
)

// parseConfigFile reads a config file's one YAML document, a mapping; a
// second document or a key without a value is refused (strictyaml), not
// ignored or replaced by the default.
func parseConfigFile(b []byte) (map[string]any, error) {
	doc, err := strictyaml.Parse(b)
	if err != nil {
		return nil, aliasHint(err, string(b))
	}
	if doc == nil {
		return nil, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid YAML: want a mapping of sections (model:, task:, …), got %v", doc)
	}
	return m, nil
}

// notAConfig says what the file at path, of text b, that is not a YAML
// config's mapping, is instead where that is clear: "a binary file", "a
// Markdown file", "a Python file"; "" otherwise (its YAML error says more).
func notAConfig(path string, b []byte) string {
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return "a binary file"
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown":
		return "a Markdown file"
	case ".py":
		return "a Python file"
	case ".sh":
		return "a shell script"
	case ".go":
		return "a Go file"
	}
	return ""
}

// foreignConfig says, for a file that is another command's input rather
// than a meazo-train config, what it is and where it goes: a model's HF
// config.json (its keys would be reported one by one as unknown, or its
// nulls as missing values) and a meazo-sweep study file. "" otherwise.
func foreignConfig(b []byte) string {
	var top map[string]any
	if yaml.Unmarshal(b, &top) != nil || top == nil {
		return ""
	}
	_, arch := top["architectures"]
	_, mt := top["model_type"]
	if arch || mt {
		return "a model's config.json (architectures, model_type), not a meazo-train config: give the model's directory as model.path (--set model.path=DIR), and --config a .yaml file of sections model:, task:, …"
	}
	_, exps := top["experiments"]
	_, coarse := top["coarse"]
	if exps || coarse {
		return "a meazo-sweep study file (experiments:, coarse:), not a meazo-train config: run it with meazo-sweep run FILE (meazo-sweep plan FILE lists its runs)"
	}
	return ""
}

// nearestConfig is, for a config file that is not there (err), the file of
// its directory whose name is nearest, as " (did you mean …?)", where one is
// a few letters away (configs/qwen06b_sst2_lora_mezo.yaml: …_meazo.yaml);
// "" otherwise.
func nearestConfig(path string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	entries, rerr := os.ReadDir(filepath.Dir(path))
	if rerr != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			names = append(names, e.Name())
		}
	}
	base := filepath.Base(path)
	if c := suggest.Closest(base, names); c != "" && suggest.Distance(base, c) <= 3 {
		return fmt.Sprintf(" (did you mean %s?)", filepath.Join(filepath.Dir(path), c))
	}
	return ""
}

// startsWithStar finds a YAML value that starts with *: a glob of
// adapter.include or adapter.exclude such as *norm*, which YAML reads as an
// alias (*name) and refuses with "did not find expected alphabetic or
// numeric character", a message that does not say what to do.
var startsWithStar = regexp.MustCompile(`(?m)(^|[\[,:]|^\s*-)\s*\*`)

// aliasErrors are the YAML errors a value starting with * gives: an alias
// name that is not one (*norm*), or one of no anchor (*norm).
var aliasErrors = regexp.MustCompile(`did not find expected alphabetic or numeric character|unknown anchor '[^']*' referenced`)

// aliasHint adds to err, a YAML error in text, that a value starting with *
// must be quoted, where err is the error such a value gives and text has
// one (not any error of a text with "- **bold**" in it: a Markdown file).
func aliasHint(err error, text string) error {
	if !aliasErrors.MatchString(err.Error()) || !startsWithStar.MatchString(text) {
		return err
	}
	return fmt.Errorf(`%w (YAML reads a value that starts with * as an alias: quote a glob that does, e.g. [model.layers.*, "*norm*"])`, err)
}

// checkValue checks a YAML value against the Go type of its key, strictly:
// the configuration decoder would otherwise truncate 2.5 to 2 for an int,
// wrap -1 to 2^64-1 for a uint64, or turn a string into a bool.
func checkValue(key string, v any) error {
	i := slices.IndexFunc(keys(), func(c configKey) bool { return c.key == key })
	if i < 0 {
		return nil // unknown keys are reported elsewhere
	}
	kind := keys()[i].kind
	show := func() string {
		if s, ok := v.(string); ok {
			return fmt.Sprintf("%q", s)
		}
		return fmt.Sprint(v)
	}
	switch kind {
	case "int", "uint64":
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case uint64:
			if kind == "uint64" {
				return nil
			}
			f = float64(x)
		case float64:
			f = x
		default:
			return fmt.Errorf("%s: want a whole number, got %s", key, show())
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: want a whole number, got %s", key, show())
		}
		if kind == "uint64" && f < 0 {
			return fmt.Errorf("%s: want a non-negative whole number, got %s", key, show())
		}
		if kind == "int" && math.Abs(f) > math.MaxInt32 || kind == "uint64" && f >= 1<<64 {
			return fmt.Errorf("%s: %s is out of range", key, show())
		}
	case "float64":
		switch v.(type) {
		case int, int64, uint64, float64:
		default:
			return fmt.Errorf("%s: want a number, got %s", key, show())
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want true or false, got %s", key, show())
		}
	case "[]string", "[]int":
		return checkList(kind, key, v, show)
	case "string":
		switch v.(type) {
		case map[string]any, []any:
			return fmt.Errorf("%s: want a single value, got %s", key, show())
		}
	}
	return nil
}

// checkList is checkValue for a list key: of names ([]string), or of
// layer indices ([]int).
func checkList(kind, key string, v any, show func() string) error {
	l, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: want a list, e.g. %s, got %s", key, map[string]string{"[]string": "[a, b]", "[]int": "[20, 21]"}[kind], show())
	}
	for i, e := range l {
		if kind == "[]string" {
			switch e.(type) {
			case string:
			case int, float64, bool:
				// YAML reads [1, 2] as numbers: the names "1" and "2" need quotes.
				return fmt.Errorf("%s: want a list of names, got element %d, %v, read as a %s: write a name that reads as one in quotes, e.g. [\"%v\"]", key, i, e, map[bool]string{true: "boolean", false: "number"}[isBool(e)], e)
			default:
				return fmt.Errorf("%s: want a list of names, got element %d, %v", key, i, e)
			}
			continue
		}
		f := math.NaN()
		switch x := e.(type) {
		case int:
			f = float64(x)
		case float64:
			f = x
		}
		if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return fmt.Errorf("%s: want a list of layer indices (whole numbers from 0), got element %v", key, e)
		}
	}
	return nil
}

// keyError is checkKeys' error about one key of a config file, so that
// Load can name the line where the key is written.
type keyError struct {
	key string // section.name, or a section
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// fileLine is path:LINE where key is written in the config file b, or path
// when it is not found there (a key that only a default gives).
func fileLine(path string, b []byte, key string) string {
	if line := strictyaml.Line(b, strings.Split(key, ".")...); line > 0 {
		return fmt.Sprintf("%s:%d", path, line)
	}
	return path
}

// trainerNames are the names HF's TrainingArguments (and its
// EarlyStoppingCallback) and MeZO's scripts give settings this config has
// under another key, for the suggestion of unknownKey (the closest
// spelling of learning_rate is not lr) and CONFIG.md's table.
var trainerNames = map[string]string{
	"learning_rate": "optimizer.lr", "lr_scheduler_type": "optimizer.schedule", "warmup_steps": "optimizer.warmup_steps",
	"num_warmup_steps": "optimizer.warmup_steps", "weight_decay": "optimizer.weight_decay", "zo_eps": "optimizer.eps",
	"max_steps": "train.steps", "per_device_train_batch_size": "train.batch_size", "eval_steps": "train.eval_every",
	"save_steps": "train.checkpoint_every", "logging_steps": "train.log_every", "output_dir": "output.dir",
	"per_device_eval_batch_size": "eval.batch_size", "model_name_or_path": "model.path", "task_name": "task.name",
	"lora_r": "adapter.r", "lora_alpha": "adapter.alpha", "use_rslora": "adapter.rslora", "layers_to_transform": "adapter.layers", "num_virtual_tokens": "adapter.virtual_tokens",
	"early_stopping_patience": "train.patience", "seed": "train.seed",
}

// unknownKey names the key and the known key closest to it (or the one a
// Trainer's name stands for).
func unknownKey(key string, known []configKey) error {
	leaf := key
	if _, l, ok := strings.Cut(key, "."); ok {
		leaf = l
	}
	if to, ok := trainerNames[leaf]; ok && to != key {
		return fmt.Errorf("unknown key %q (did you mean %q? %s is HF Trainer's or MeZO's name for it)", key, to, leaf)
	}
	if full := keysNamed(key, known); len(full) > 0 { // "lr" for optimizer.lr
		return fmt.Errorf("unknown key %q (did you mean %s? a key is its section and its name)", key, quotedOr(full))
	}
	var cands []string
	for _, k := range known {
		cand := k.key
		if !strings.Contains(key, ".") { // a section name
			cand, _, _ = strings.Cut(k.key, ".")
		}
		cands = append(cands, cand)
	}
	return fmt.Errorf("unknown key %q (did you mean %q?)", key, suggest.Closest(key, cands))
}

// keysNamed returns the known keys whose name within their section is
// name, where name has no section of its own.
func keysNamed(name string, known []configKey) []string {
	if strings.Contains(name, ".") {
		return nil
	}
	var full []string
	for _, k := range known {
		if _, leaf, _ := strings.Cut(k.key, "."); leaf == name {
			full = append(full, k.key)
		}
	}
	return full
}

// quotedOr writes names quoted and joined by "or".
func quotedOr(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}

// isBool says whether v is a boolean.
func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}
