package eval

import "strings"

// PorterStem is NLTK's PorterStemmer().stem(word) in its default
// NLTK_EXTENSIONS mode (nltk 3.8), which rouge_score uses for stemming. It
// expects a lower-case ASCII word, which is all rouge_score ever passes it.
func PorterStem(word string) string {
	stem := strings.ToLower(word)
	if s, ok := porterIrregular[stem]; ok {
		return s
	}
	if len(stem) <= 2 {
		return stem
	}
	stem = step1a(stem)
	stem = step1b(stem)
	stem = step1c(stem)
	stem = step2(stem)
	stem = step3(stem)
	stem = step4(stem)
	stem = step5a(stem)
	stem = step5b(stem)
	return stem
}

// porterIrregular is NLTK's table of irregular forms (word -> stem).
var porterIrregular = map[string]string{
	"sky": "sky", "skies": "sky",
	"dying": "die", "lying": "lie", "tying": "tie",
	"news":    "news",
	"innings": "inning", "inning": "inning",
	"outings": "outing", "outing": "outing",
	"cannings": "canning", "canning": "canning",
	"howe":    "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

func isVowelByte(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

// isConsonant: a letter other than a, e, i, o, u, and other than a y that
// follows a consonant.
func isConsonant(w string, i int) bool {
	if isVowelByte(w[i]) {
		return false
	}
	if w[i] == 'y' {
		if i == 0 {
			return true
		}
		return !isConsonant(w, i-1)
	}
	return true
}

// measure is m in [C](VC)^m[V]: the number of vowel-consonant transitions.
func measure(stem string) int {
	m := 0
	prevVowel := false
	for i := 0; i < len(stem); i++ {
		c := isConsonant(stem, i)
		if c && prevVowel {
			m++
		}
		prevVowel = !c
	}
	return m
}

func positiveMeasure(stem string) bool { return measure(stem) > 0 }

func containsVowel(stem string) bool {
	for i := 0; i < len(stem); i++ {
		if !isConsonant(stem, i) {
			return true
		}
	}
	return false
}

func endsDoubleConsonant(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && isConsonant(w, n-1)
}

// endsCVC is *o: consonant-vowel-consonant with the last not w, x or y, or
// (NLTK extension) a two-letter vowel-consonant word.
func endsCVC(w string) bool {
	n := len(w)
	if n >= 3 && isConsonant(w, n-3) && !isConsonant(w, n-2) && isConsonant(w, n-1) &&
		w[n-1] != 'w' && w[n-1] != 'x' && w[n-1] != 'y' {
		return true
	}
	return n == 2 && !isConsonant(w, 0) && isConsonant(w, 1)
}

// rule is one suffix rewrite; suffix "*d" means "ends in a double consonant".
type rule struct {
	suffix, replacement string
	cond                func(stem string) bool // nil: always
}

// applyRules applies the first rule whose suffix matches; if its condition
// fails, no later rule is tried (NLTK's _apply_rule_list).
func applyRules(w string, rules []rule) string {
	for _, r := range rules {
		if r.suffix == "*d" && endsDoubleConsonant(w) {
			stem := w[:len(w)-2]
			if r.cond == nil || r.cond(stem) {
				return stem + r.replacement
			}
			return w
		}
		if strings.HasSuffix(w, r.suffix) {
			stem := w[:len(w)-len(r.suffix)]
			if r.cond == nil || r.cond(stem) {
				return stem + r.replacement
			}
			return w
		}
	}
	return w
}

func step1a(w string) string {
	if strings.HasSuffix(w, "ies") && len(w) == 4 {
		return w[:len(w)-3] + "ie"
	}
	return applyRules(w, []rule{
		{"sses", "ss", nil},
		{"ies", "i", nil},
		{"ss", "ss", nil},
		{"s", "", nil},
	})
}

func step1b(w string) string {
	if strings.HasSuffix(w, "ied") {
		if len(w) == 4 {
			return w[:len(w)-3] + "ie"
		}
		return w[:len(w)-3] + "i"
	}
	if strings.HasSuffix(w, "eed") {
		stem := w[:len(w)-3]
		if measure(stem) > 0 {
			return stem + "ee"
		}
		return w
	}
	var stem string
	ok := false
	for _, suffix := range []string{"ed", "ing"} {
		if strings.HasSuffix(w, suffix) {
			stem = w[:len(w)-len(suffix)]
			if containsVowel(stem) {
				ok = true
				break
			}
		}
	}
	if !ok {
		return w
	}
	last := ""
	if len(stem) > 0 {
		last = stem[len(stem)-1:]
	}
	return applyRules(stem, []rule{
		{"at", "ate", nil},
		{"bl", "ble", nil},
		{"iz", "ize", nil},
		{"*d", last, func(string) bool { return last != "l" && last != "s" && last != "z" }},
		{"", "e", func(s string) bool { return measure(s) == 1 && endsCVC(s) }},
	})
}

// step1c: y -> i when preceded by a consonant that is not the whole stem.
func step1c(w string) string {
	return applyRules(w, []rule{
		{"y", "i", func(s string) bool { return len(s) > 1 && isConsonant(s, len(s)-1) }},
	})
}

func step2(w string) string {
	if strings.HasSuffix(w, "alli") && positiveMeasure(w[:len(w)-4]) {
		return step2(w[:len(w)-4] + "al")
	}
	m := positiveMeasure
	return applyRules(w, []rule{
		{"ational", "ate", m},
		{"tional", "tion", m},
		{"enci", "ence", m},
		{"anci", "ance", m},
		{"izer", "ize", m},
		{"bli", "ble", m},
		{"alli", "al", m},
		{"entli", "ent", m},
		{"eli", "e", m},
		{"ousli", "ous", m},
		{"ization", "ize", m},
		{"ation", "ate", m},
		{"ator", "ate", m},
		{"alism", "al", m},
		{"iveness", "ive", m},
		{"fulness", "ful", m},
		{"ousness", "ous", m},
		{"aliti", "al", m},
		{"iviti", "ive", m},
		{"biliti", "ble", m},
		{"fulli", "ful", m},
		// The l of logi stays with the stem, so short stems like geo work.
		{"logi", "log", func(string) bool { return positiveMeasure(w[:len(w)-3]) }},
	})
}

func step3(w string) string {
	m := positiveMeasure
	return applyRules(w, []rule{
		{"icate", "ic", m},
		{"ative", "", m},
		{"alize", "al", m},
		{"iciti", "ic", m},
		{"ical", "ic", m},
		{"ful", "", m},
		{"ness", "", m},
	})
}

func step4(w string) string {
	m := func(s string) bool { return measure(s) > 1 }
	return applyRules(w, []rule{
		{"al", "", m},
		{"ance", "", m},
		{"ence", "", m},
		{"er", "", m},
		{"ic", "", m},
		{"able", "", m},
		{"ible", "", m},
		{"ant", "", m},
		{"ement", "", m},
		{"ment", "", m},
		{"ent", "", m},
		{"ion", "", func(s string) bool {
			return measure(s) > 1 && (s[len(s)-1] == 's' || s[len(s)-1] == 't')
		}},
		{"ou", "", m},
		{"ism", "", m},
		{"ate", "", m},
		{"iti", "", m},
		{"ous", "", m},
		{"ive", "", m},
		{"ize", "", m},
	})
}

func step5a(w string) string {
	if strings.HasSuffix(w, "e") {
		stem := w[:len(w)-1]
		if measure(stem) > 1 {
			return stem
		}
		if measure(stem) == 1 && !endsCVC(stem) {
			return stem
		}
	}
	return w
}

func step5b(w string) string {
	return applyRules(w, []rule{
		{"ll", "l", func(string) bool { return measure(w[:len(w)-1]) > 1 }},
	})
}
