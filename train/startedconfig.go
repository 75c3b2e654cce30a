package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/rundir"
)

// StartedConfig is the configuration the run in dir started with: its
// config.yaml with every setting that changes.jsonl records as changed
// since (a resume's --set, an early stop's train.steps) put back to the
// value of its first change. A study compares it with what it would give
// the run now (meazo-sweep: a study file edited after its runs).
func StartedConfig(dir string) (*Config, error) {
	c, err := Load(filepath.Join(dir, rundir.ConfigFile), nil)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, rundir.ChangesFile))
	if os.IsNotExist(err) {
		return c, nil
	} else if err != nil {
		return nil, err
	}
	first := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ch ConfigChange
		if strings.TrimSpace(line) == "" {
			continue
		}
		if json.Unmarshal([]byte(line), &ch) != nil {
			return nil, fmt.Errorf("%s: line %d is not a change", filepath.Join(dir, rundir.ChangesFile), i+1)
		}
		if notASetting(ch.Key) || first[ch.Key] {
			continue
		}
		first[ch.Key] = true
		if err := setKey(c, ch.Key, ch.Old); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", filepath.Join(dir, rundir.ChangesFile), i+1, err)
		}
	}
	return c, nil
}

// setKey sets the setting key ("train.steps") of c to v, a value as
// encoding/json decodes it (a number is a float64).
func setKey(c *Config, key string, v any) error {
	section, name, _ := strings.Cut(key, ".")
	sv := reflect.ValueOf(c).Elem()
	for i := range sv.NumField() {
		if sv.Type().Field(i).Tag.Get("mapstructure") != section {
			continue
		}
		fv := sv.Field(i)
		for j := range fv.NumField() {
			if fv.Type().Field(j).Tag.Get("mapstructure") != name {
				continue
			}
			f, val := fv.Field(j), reflect.ValueOf(v)
			if !val.IsValid() || kindOf(val.Kind()) != kindOf(f.Kind()) || !val.CanConvert(f.Type()) {
				return fmt.Errorf("%s: %v is not a %s", key, v, f.Type())
			}
			f.Set(val.Convert(f.Type()))
			return nil
		}
	}
	return fmt.Errorf("%s is not a setting", key)
}

// kindOf groups kinds as a setting's value may be converted: numbers with
// numbers, a string or a bool only with its own kind.
func kindOf(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		return "number"
	}
	return k.String()
}

// ConfigDiff lists the settings whose values differ between a and b (Old
// a's, New b's), in the order CONFIG.md lists them (configDiff), leaving out
// those named in ignore.
func ConfigDiff(a, b *Config, ignore ...string) []ConfigChange {
	return slices.DeleteFunc(configDiff(a, b), func(c ConfigChange) bool { return slices.Contains(ignore, c.Key) })
}

// emptyList says whether v is a list without elements (nil or not).
func emptyList(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Slice && r.Len() == 0
}

// DescribeChanges is "key old -> new, …" for changes.
func DescribeChanges(cs []ConfigChange) string { return describeChanges(cs) }
