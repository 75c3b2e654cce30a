package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// The Llama-3 and Qwen2/3 pre-tokenizers split text with this regex (Split,
// behavior Isolated), the two differing only in how many digits go together;
// GPT-2's (OPT's) is ByteLevel's own regex (use_regex, and GPT2Tokenizer's
// pattern):
const (
	llama3SplitRegex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2SplitRegex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	gpt2SplitRegex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitter is a hand-written matcher for those patterns. It returns the
// same pieces as the backtracking regex engine HF uses (the alternatives are
// tried in order at each position, the first that matches wins), without a
// regex engine: every position of the text starts a match, so the pieces
// simply tile the text.
type splitter struct {
	maxDigits int  // 3 for Llama-3 (\p{N}{1,3}), 1 for Qwen (\p{N})
	tekken    bool // Mistral's tekken regex instead (pretokenize_tekken.go)
	gpt2      bool // GPT-2's pattern instead (maxDigits unused)
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return (r|0x20) >= 'a' && (r|0x20) <= 'z'
	}
	return inRanges(letters16, r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return inRanges(numbers16, r)
}

// isSpace is Unicode White_Space, which is what \s means in Oniguruma.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return inRanges(spaces16, r)
}

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// inRanges reports whether r lies in one of the sorted, disjoint ranges.
func inRanges(rs []runeRange, r rune) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < rs[m].lo:
			hi = m
		case r > rs[m].hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// next returns the end of the piece that starts at s[i] (i < len(s)).
func (p splitter) next(s string, i int) int {
	if p.tekken {
		return tekkenNext(s, i)
	}
	if p.gpt2 {
		return nextGPT2(s, i)
	}
	r0, w0 := runeAt(s, i)

	// (?i:'s|'t|'re|'ve|'m|'ll|'d): Oniguruma's case folding also matches
	// U+017F (ſ, LATIN SMALL LETTER LONG S) for s.
	if r0 == '\'' && strings.HasPrefix(s[i+1:], "\u017f") {
		return i + 3
	}
	if r0 == '\'' && i+1 < len(s) {
		switch s[i+1] | 0x20 {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2]|0x20 == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2]|0x20 == 'l' {
				return i + 3
			}
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isLetter(r0) {
		return p.letters(s, i+w0)
	}
	if r0 != '\r' && r0 != '\n' && !isNumber(r0) && i+w0 < len(s) {
		if r1, w1 := runeAt(s, i+w0); isLetter(r1) {
			return p.letters(s, i+w0+w1)
		}
	}

	// \p{N}{1,3} or \p{N}
	if isNumber(r0) {
		j := i + w0
		for n := 1; n < p.maxDigits && j < len(s); n++ {
			r, w := runeAt(s, j)
			if !isNumber(r) {
				break
			}
			j += w
		}
		return j
	}

	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if j, ok := punctuation(s, i, r0, false); ok {
		return j
	}

	// Only whitespace is left: r0 is a space character.
	return p.spaces(s, i)
}

// punctuation matches ' ?[^\s\p{L}\p{N}]+[\r\n]*' at s[i] (whose rune is
// r0), or with slash tekken's ' ?[^\s\p{L}\p{N}]+[\r\n/]*'.
func punctuation(s string, i int, r0 rune, slash bool) (int, bool) {
	j := i
	if r0 == ' ' {
		j++
	}
	if j >= len(s) {
		return 0, false
	}
	if r, _ := runeAt(s, j); isSpace(r) || isLetter(r) || isNumber(r) {
		return 0, false
	}
	for j < len(s) {
		r, w := runeAt(s, j)
		if isSpace(r) || isLetter(r) || isNumber(r) {
			break
		}
		j += w
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slash && s[j] == '/') {
		j++
	}
	return j, true
}

// spaces matches \s*[\r\n]+|\s+(?!\S)|\s+ at s[i], a space character.
func (splitter) spaces(s string, i int) int {
	end, lastBreak, lastStart := i, -1, i
	for end < len(s) {
		r, w := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastBreak = end
		}
		lastStart = end
		end += w
	}
	// \s*[\r\n]+ ends after the run's last line break.
	if lastBreak >= 0 {
		return lastBreak + 1
	}
	// \s+(?!\S) takes the run, less its last character when a non-space follows.
	if end == len(s) {
		return end
	}
	if lastStart > i {
		return lastStart
	}
	// \s+
	return end
}

// letters is runOf(s, j, isLetter), spelled out: it is the hot loop of
// Llama-3's and Qwen's pre-tokenizers.
func (p splitter) letters(s string, j int) int {
	for j < len(s) {
		r, w := runeAt(s, j)
		if !isLetter(r) {
			break
		}
		j += w
	}
	return j
}

// runOf returns the end of the longest run of characters in the class from
// s[j].
func runOf(s string, j int, in func(rune) bool) int {
	for j < len(s) {
		r, w := runeAt(s, j)
		if !in(r) {
			break
		}
		j += w
	}
	return j
}

// nextGPT2 is next for GPT-2's pattern:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (the contractions case-sensitive; " ?" is one U+0020 space).
func nextGPT2(s string, i int) int {
	if s[i] == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	j := i
	if s[i] == ' ' {
		j++
	}
	if j < len(s) {
		r, w := runeAt(s, j)
		class := func(r rune) int { // 1 letter, 2 number, 3 other, 0 space
			switch {
			case isLetter(r):
				return 1
			case isNumber(r):
				return 2
			case isSpace(r):
				return 0
			}
			return 3
		}
		if c := class(r); c != 0 {
			for j += w; j < len(s); j += w {
				if r, w = runeAt(s, j); class(r) != c {
					break
				}
			}
			return j
		}
	}
	// Only whitespace is left: \s+(?!\S) takes the run, less its last
	// character when a non-space follows; \s+ the run.
	end, lastStart := i, i
	for end < len(s) {
		r, w := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		lastStart = end
		end += w
	}
	if end < len(s) && lastStart > i {
		return lastStart
	}
	return end
}
