package sweep

// A study file's keys and values, checked against the Study type before the
// YAML decoder reads it: an unknown key suggests the closest known one, and a
// value of the wrong type names its key (LoadStudy adds the line), where the
// decoder would name neither or truncate a seed of 1.5 to 1 without a word.

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/meazo-go/meazo/internal/suggest"
)

// unknownKeyError is a study file's key that no field has (key: its path,
// list elements by index), for LoadStudy to name the line it is on.
type unknownKeyError struct{ key, closest string }

func (e *unknownKeyError) Error() string {
	return fmt.Sprintf("unknown key %q (did you mean %q?)", e.key, e.closest)
}

// valueError is a study file's value of the wrong type (key: its path, as
// unknownKeyError's), for LoadStudy to name the line it is on. The YAML
// decoder's own message names neither the key nor, for a seed of 1.5 it
// truncates to 1, any mistake.
type valueError struct{ key, want string }

func (e *valueError) Error() string { return e.key + ": " + e.want }

// checkStrict rejects keys the type t lacks, suggesting the closest one,
// and values that are not of their key's type (checkValue).
func checkStrict(v any, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return nil // strictyaml.Parse refuses a key without a value
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return &valueError{strings.TrimSuffix(prefix, "."), fmt.Sprintf("want a mapping of keys, got %v", v)}
		}
		known := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			known[tag] = f.Type
			names = append(names, tag)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := known[k]
			if !ok {
				return &unknownKeyError{prefix + k, prefix + suggest.Closest(k, names)}
			}
			if err := checkStrict(m[k], ft, prefix+k+"."); err != nil {
				return err
			}
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return &valueError{strings.TrimSuffix(prefix, "."), "want a list, got " + showValue(v)}
		}
		for i, e := range l {
			if err := checkStrict(e, t.Elem(), fmt.Sprintf("%s%d.", prefix, i)); err != nil {
				return err
			}
		}
	default:
		if want := checkValue(v, t.Kind()); want != "" {
			return &valueError{strings.TrimSuffix(prefix, "."), want + ", got " + showValue(v)}
		}
	}
	return nil
}

// checkValue says what a scalar of the given kind wants when v, as YAML
// read it, is not one ("" when it is): the decoder would truncate a seed of
// 1.5 to 1 without a word.
func checkValue(v any, kind reflect.Kind) string {
	switch kind {
	case reflect.Int, reflect.Uint64:
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case uint64:
			if kind == reflect.Uint64 {
				return ""
			}
			f = float64(x)
		case float64:
			f = x
		default:
			return "want a whole number"
		}
		switch {
		case f != math.Trunc(f) || math.IsInf(f, 0):
			if kind == reflect.Uint64 {
				return "want a non-negative whole number"
			}
			return "want a whole number"
		case kind == reflect.Uint64 && f < 0:
			return "want a non-negative whole number"
		case kind == reflect.Int && math.Abs(f) > math.MaxInt32:
			return "want a whole number of at most 2147483647"
		case kind == reflect.Uint64 && f >= 1<<64:
			return "want a non-negative whole number below 2^64"
		}
	case reflect.Float64:
		switch v.(type) {
		case int, uint64, float64:
		default:
			return "want a number"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return "want true or false"
		}
	case reflect.String:
		switch v.(type) {
		case map[string]any, []any:
			return "want a single value"
		}
	}
	return ""
}

// showValue writes a value of a study file for a message: a string quoted,
// so that "abc" and abc read apart from numbers.
func showValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
