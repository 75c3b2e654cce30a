// Package clip shortens what an error quotes from an input file: model
// repositories, datasets and configs come from strangers, and a name, key
// or value of megabytes (a tensor's name, an added token, a malformed row)
// made an error of megabytes. A clipped string keeps its first bytes, cut
// at a rune's start, and says how long it was.
package clip

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is how many bytes of a string from an input file a message quotes
// unless the caller says otherwise: a whole name as real checkpoints write
// them (a PEFT adapter's tensor names reach 90 bytes:
// base_model.model.model.language_model.layers.25.self_attn.q_proj.lora_A.default.weight),
// and still a line, not megabytes.
const Max = 160

// Prefix is s's first n bytes, cut back to a rune's start; s itself when it
// is no longer than n.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back over at most a rune's continuation bytes: in invalid UTF-8
	// (a stranger's binary name) a longer run is no rune to keep whole,
	// and walking back over all of it quoted the string as "".
	cut := max(n, 0)
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	return s[:cut]
}

// RawN is s as written (a JSON value, a message), or its first n bytes
// then "… (L bytes)".
func RawN(s string, n int) string {
	if cut := Prefix(s, n); cut != s {
		return fmt.Sprintf("%s… (%d bytes)", cut, len(s))
	}
	return s
}

// Raw is RawN(s, Max).
func Raw(s string) string { return RawN(s, Max) }

// QuoteN is strconv.Quote of s, or of its first n bytes then "… (L bytes)".
func QuoteN(s string, n int) string {
	if cut := Prefix(s, n); cut != s {
		return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(cut), len(s))
	}
	return strconv.Quote(s)
}

// Quote is QuoteN(s, Max).
func Quote(s string) string { return QuoteN(s, Max) }

// List is a list as %q prints one, ["a" "b"], each string as Quote gives
// it and at most three of them, then how many more.
func List(ss []string) string {
	parts := make([]string, 0, 4)
	for i, s := range ss {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(ss)-3))
			break
		}
		parts = append(parts, Quote(s))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
