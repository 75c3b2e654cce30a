package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/meazo-go/meazo/internal/strictyaml"
)

// parseConfigFile reads a config file's one YAML document, a mapping; a
// second document or a key without a value is refused (strictyaml), not
// ignored or replaced by the default.
func parseConfigFile(b []byte) (map[string]any, error) {
	doc, err := strictyaml.Parse(b)
	if err != nil {
		return nil, err
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
	case "[]string":
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want a list, e.g. [a, b], got %s", key, show())
		}
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return fmt.Errorf("%s: want a list of names, got element %v", key, e)
			}
		}
	case "string":
		switch v.(type) {
		case map[string]any, []any:
			return fmt.Errorf("%s: want a single value, got %s", key, show())
		}
	}
	return nil
}
