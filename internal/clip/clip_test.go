package clip

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("a", Max+20)
	for _, c := range []struct {
		name, got, want string
	}{
		{"short quote", Quote("q_proj"), `"q_proj"`},
		{"exactly Max", Quote(long[:Max]), `"` + long[:Max] + `"`},
		{"long quote", Quote(long), `"` + long[:Max] + `"… (180 bytes)`},
		{"quote of n", QuoteN("abcdef", 3), `"abc"… (6 bytes)`},
		{"cut at a rune's start", QuoteN("ab€", 3), `"ab"… (5 bytes)`},
		{"raw", RawN(`{"a": 1}`, 4), `{"a"… (8 bytes)`},
		{"raw short", Raw(`[1, 2]`), `[1, 2]`},
		{"prefix zero", Prefix("€", 0), ""},
		{"prefix inside the first rune", Prefix("€x", 2), ""},
		{"prefix of invalid UTF-8", Prefix(strings.Repeat("\x80", 10), 5), strings.Repeat("\x80", 2)},
		{"a 4-byte rune cut after its third byte", Prefix("ab😀", 5), "ab"},
		{"list", List([]string{"a", "b"}), `["a" "b"]`},
		{"list of five", List([]string{"a", "b", "c", "d", "e"}), `["a" "b" "c" … (2 more)]`},
		{"empty list", List(nil), `[]`},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
}
