// The --set overrides of a config: how each is applied and checked, and
// the one form of every message about one (OverrideError).

package train

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// applyOverride sets one --set key=value in v, checked against the key's
// type.
func applyOverride(v *viper.Viper, o string, known []configKey) error {
	key, val, err := SplitOverride(o)
	if err != nil {
		return err
	}
	if err := checkKey(key, known); err != nil {
		return &OverrideError{key, err}
	}
	// A string key takes the text as it is, spaces included (a prompt's
	// leading space is a token's): read as YAML, the path "exp #1"
	// would lose its comment-like tail, "007" would be 7 and "1e3"
	// 1000, and the run would go somewhere else without a word.
	var parsed any = val
	if kind := keyKind(key, known); kind != "string" {
		if err := yaml.Unmarshal([]byte(val), &parsed); err != nil {
			return &OverrideError{key, aliasHint(err, val)}
		}
		// A number with leading zeros is decimal on a command line
		// (YAML reads "010" as octal 8: a run would take 8 steps).
		if kind == "int" || kind == "uint64" || kind == "float64" {
			if n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); err == nil {
				parsed = n
			} else if n, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64); err == nil {
				parsed = n
			}
		}
	}
	if parsed == nil {
		parsed = ""
	}
	if err := checkValue(key, parsed); err != nil {
		return &OverrideError{key, err}
	}
	v.Set(key, parsed)
	return nil
}

// OverrideError is what is wrong with a --set override, in the one form of
// every such message: "--set KEY: PROBLEM", as a config file's read
// "config PATH:LINE: PROBLEM". KEY is the key as given (the whole
// override, quoted, where it has none); PROBLEM is Err without the key it
// starts with (the checks name their key, as a config file's messages need):
//
//	--set "train.steps": want key=value, e.g. --set optimizer.lr=2e-4
//	--set train.stepz: unknown key "train.stepz" (did you mean "train.steps"?)
//	--set train.steps: want a whole number, got 2.5
//	--set train.batch_size: must be at least 1, got 0
type OverrideError struct {
	Key string
	Err error
}

func (e *OverrideError) Error() string {
	msg := e.Err.Error()
	if rest, ok := strings.CutPrefix(msg, e.Key); ok && e.Key != "" && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ": ")) {
		msg = strings.TrimPrefix(strings.TrimPrefix(rest, ":"), " ")
	}
	return "--set " + e.Key + ": " + msg
}

func (e *OverrideError) Unwrap() error { return e.Err }

// errNoKeyValue is the problem of an override that is not key=value.
var errNoKeyValue = errors.New("want key=value, e.g. --set optimizer.lr=2e-4")

// SplitOverride splits a --set override into its key (spaces around it
// dropped) and value, or says (an *OverrideError) that it is not
// key=value.
func SplitOverride(o string) (key, value string, err error) {
	key, value, ok := strings.Cut(o, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return "", "", &OverrideError{strconv.Quote(o), errNoKeyValue}
	}
	return key, value, nil
}

// blame is err, a value the checks refuse (its message starts with its
// key), with where it was given: --set when an override set that key (an
// *OverrideError), else the config file's line (file is its text), else
// the config. A key the file does not hold has its default, which another
// key's --set may have made wrong (optimizer.q's 1 once optimizer.name=fzoo
// is set): the overrides are named with the file.
func blame(err error, path string, file []byte, overrides []string) error {
	key, _, _ := strings.Cut(err.Error(), " ")
	key = strings.TrimSuffix(key, ":") // "adapter.layers: layer 1 is named twice …"
	for _, o := range overrides {
		if k, _, _ := SplitOverride(o); k == key {
			return &OverrideError{key, err}
		}
	}
	switch {
	case path == "":
		return fmt.Errorf("config: %w", err)
	case strings.Contains(key, "."):
		where := fileLine(path, file, key)
		if where == path && len(overrides) > 0 {
			where += " with --set " + strings.Join(overrides, ", --set ")
		}
		return fmt.Errorf("config %s: %w", where, err)
	}
	return fmt.Errorf("config %s: %w", path, err)
}

// dropNameWithPath clears model.name when --set moves model.path elsewhere
// than the config's (filePath) and does not name the model: a config's hub
// name (Qwen/Qwen3-0.6B) would otherwise label adapters and results made
// on other weights (random ones of the same shapes, a fine-tuned copy),
// and PEFT would load the published model under them.
func dropNameWithPath(v *viper.Viper, overrides []string, filePath string) {
	var path, name bool
	for _, o := range overrides {
		switch key, _, _ := SplitOverride(o); key {
		case "model.path":
			path = true
		case "model.name":
			name = true
		}
	}
	if path && !name && filepath.Clean(v.GetString("model.path")) != filepath.Clean(filePath) {
		v.Set("model.name", "")
	}
}
