package eval

import (
	"strings"
	"unicode"
)

// pyLower is Python 3's str.lower(): the simple per-rune lowercase mapping
// plus the two context rules Python applies. U+0130 (İ) lowers to "i̇"
// (i + U+0307, SpecialCasing.txt), and a capital sigma lowers to the final
// form ς when it ends a word (Unicode's Final_Sigma condition).
func pyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(rs, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports Unicode's Final_Sigma condition for rs[i], as CPython's
// handle_capital_sigma does: a cased letter before it (skipping
// case-ignorable runes) and no cased letter after it (likewise).
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && isCaseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !isCased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && isCaseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !isCased(rs[j])
}

// isCased is Unicode's Cased property: Lu, Ll, Lt, Other_Lowercase, Other_Uppercase.
func isCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// isCaseIgnorable is Unicode's Case_Ignorable property: Mn, Me, Cf, Lm, Sk and
// the Word_Break classes MidLetter, MidNumLet and Single_Quote.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '\u00b7', '\u0387', '\u055f', '\u05f4', '\u2018', '\u2019',
		'\u2024', '\u2027', '\ufe13', '\ufe52', '\ufe55', '\uff07', '\uff0e', '\uff1a':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// pyIsSpace is Python's str.isspace() for one rune, which str.split() uses:
// Unicode White_Space plus the ASCII separators U+001C..U+001F.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pySplit is Python's str.split() with no arguments.
func pySplit(s string) []string {
	return strings.FieldsFunc(s, pyIsSpace)
}

// pyIsWord is a \w character of Python's re module on str patterns:
// alphanumeric (letters L*, numbers N*) or underscore. Combining marks are not.
func pyIsWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}
