package jsonkeys

import (
	"strings"
	"testing"
)

func TestUnapplied(t *testing.T) {
	known := map[string]bool{"r": true, "lora_alpha": true}
	for _, c := range []struct{ json, key, value string }{
		{`{"r": 4, "lora_alpha": 8}`, "", ""},
		{`{"r": 4, "new_key": null, "flag": false, "n": 0, "s": "", "l": [], "m": {}}`, "", ""},
		{`{"r": 4, "use_qalora": true}`, "use_qalora", "true"},
		{`{"r": 4, "z": 1, "target_parameters": ["mlp.experts"]}`, "target_parameters", `["mlp.experts"]`},
		{`{"r": 4, "alora_invocation_tokens": [5, 6]}`, "alora_invocation_tokens", "[5, 6]"},
		{`[1, 2]`, "", ""},
		{`{"` + strings.Repeat("é", 1<<19) + `": 1}`, strings.Repeat("é", 30) + "… (1048576 bytes)", "1"},
		{`{"k": "` + strings.Repeat("é", 100) + `"}`, "k", `"` + strings.Repeat("é", 29) + "… (202 bytes)"},
	} {
		if k, v := Unapplied([]byte(c.json), known); k != c.key || v != c.value {
			t.Errorf("%.100s: %.100q %q, want %.100q %q", c.json, k, v, c.key, c.value)
		}
	}
}
