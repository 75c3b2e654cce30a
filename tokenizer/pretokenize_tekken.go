package tokenizer

// tekkenSplitRegex is the pre-tokenizer regex of Mistral's tekken BPE
// (Mistral-Nemo, Pixtral, Ministral-3: the Split of their tokenizer.json).
// Unlike Llama-3's it has no contractions, one digit a piece, and splits
// letters by case: an optional non-letter, then "uppercase-like" letters
// followed by "lowercase-like" ones (HTTPServer, Paris), or uppercase-like
// ones alone (NASA), where Lm, Lo and marks count as both; a punctuation run
// takes trailing line breaks and slashes.
const tekkenSplitRegex = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

func isTekkenUpper(r rune) bool {
	if r < 0x80 {
		return r >= 'A' && r <= 'Z'
	}
	return inRanges(tekkenUpper16, r)
}

func isTekkenLower(r rune) bool {
	if r < 0x80 {
		return r >= 'a' && r <= 'z'
	}
	return inRanges(tekkenLower16, r)
}

// tekkenNext returns the end of the piece of tekkenSplitRegex that starts at
// s[i], trying the alternatives in order as the backtracking engine does.
func tekkenNext(s string, i int) int {
	r0, w0 := runeAt(s, i)
	// The letter alternatives, each first with the optional leading
	// character taken (if r0 may be one), then without it.
	prefix := r0 != '\r' && r0 != '\n' && !isLetter(r0) && !isNumber(r0)
	if prefix {
		if j, ok := tekkenUpperLower(s, i+w0); ok {
			return j
		}
	}
	if j, ok := tekkenUpperLower(s, i); ok {
		return j
	}
	if prefix {
		if j, ok := tekkenUpperThenLower(s, i+w0); ok {
			return j
		}
	}
	if j, ok := tekkenUpperThenLower(s, i); ok {
		return j
	}
	// \p{N}
	if isNumber(r0) {
		return i + w0
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
	if j, ok := punctuation(s, i, r0, true); ok {
		return j
	}
	// Whitespace: the same three alternatives as Llama-3's regex.
	return splitter{}.spaces(s, i)
}

// tekkenUpperLower matches [upper]*[lower]+ at s[j]: the greedy upper run,
// given back one character at a time until a lower-class character follows,
// then the longest lower run.
func tekkenUpperLower(s string, j int) (int, bool) {
	var starts []int // where each character of the upper run begins
	k := j
	for k < len(s) {
		r, w := runeAt(s, k)
		if !isTekkenUpper(r) {
			break
		}
		starts = append(starts, k)
		k += w
	}
	starts = append(starts, k)
	for m := len(starts) - 1; m >= 0; m-- {
		p := starts[m]
		if p < len(s) {
			if r, _ := runeAt(s, p); isTekkenLower(r) {
				return runOf(s, p, isTekkenLower), true
			}
		}
	}
	return 0, false
}

// tekkenUpperThenLower matches [upper]+[lower]* at s[j].
func tekkenUpperThenLower(s string, j int) (int, bool) {
	k := runOf(s, j, isTekkenUpper)
	if k == j {
		return 0, false
	}
	return runOf(s, k, isTekkenLower), true
}
