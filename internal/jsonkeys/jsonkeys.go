// Package jsonkeys finds what a JSON config file says that its reader would
// ignore: a key the reader does not know, set to something (not null,
// false, 0, "", [] or {}), is a stated intent the reader cannot honour, and
// ignoring it would compute something other than what the file describes.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/meazo-go/meazo/internal/clip"
)

// Unapplied returns the first key (in sorted order) of the JSON object b
// that is not in known and whose value is not off (the key clipped to 60
// bytes, clip.RawN), with that value as written (clipped the same way); "" when there is none or b
// is not an object (the reader reports that).
func Unapplied(b []byte, known map[string]bool) (key, value string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return "", ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] && !isOff(m[k]) {
			// (a stranger's key of megabytes made an error of megabytes)
			return clip.RawN(k, 60), clip.RawN(string(bytes.TrimSpace(m[k])), 60)
		}
	}
	return "", ""
}

// isOff says whether v is null, false, 0, "", [] or {}.
func isOff(v json.RawMessage) bool {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
