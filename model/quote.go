package model

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// quotedMax is how much of a string from an input file an error quotes: a
// stranger's name of megabytes (a tensor's, a dtype's, an architecture's)
// made an error of megabytes.
const quotedMax = 80

// quote is strconv.Quote of s, or of its first quotedMax bytes (cut at a
// rune's start) with its length, for a message.
func quote(s string) string {
	if len(s) <= quotedMax {
		return strconv.Quote(s)
	}
	cut := quotedMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// quoteList is a list as %q prints one, ["a" "b"], each string quoted as
// quote does and at most three of them, then how many more.
func quoteList(ss []string) string {
	parts := make([]string, 0, 4)
	for i, s := range ss {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(ss)-3))
			break
		}
		parts = append(parts, quote(s))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// clipRaw is a JSON value as written, or its first quotedMax bytes (cut at
// a rune's start) with its length.
func clipRaw(raw []byte) string {
	if len(raw) <= quotedMax {
		return string(raw)
	}
	cut := quotedMax
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", raw[:cut], len(raw))
}
