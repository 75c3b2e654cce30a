package eval

import (
	"strings"
	"unicode/utf8"
)

// asciiPunctuation is Python's string.punctuation.
const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is the official SQuAD v1.1 normalize_answer: lower case,
// remove ASCII punctuation, replace the articles a/an/the (as whole words,
// Unicode-aware \b) with a space, and collapse whitespace.
func NormalizeAnswer(s string) string {
	s = pyLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x80 && strings.ContainsRune(asciiPunctuation, r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(pySplit(s), " ")
}

// removeArticles is re.sub(r"\b(a|an|the)\b", " ", s). The articles are
// ASCII word characters, so the \b on each side means "the neighbouring rune
// is not a word character (or is the edge of the string)".
func removeArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prevWord := false // is the rune before i a word character?
	for i := 0; i < len(s); {
		if !prevWord {
			if n := articleAt(s, i); n > 0 {
				b.WriteByte(' ')
				i += n
				prevWord = true // the article's last letter
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		prevWord = pyIsWord(r)
		i += size
	}
	return b.String()
}

// articleAt returns the length of the article that starts at s[i] and is
// followed by a non-word rune or the end, trying a, an, the in the regex's order.
func articleAt(s string, i int) int {
	for _, a := range [...]string{"a", "an", "the"} {
		if !strings.HasPrefix(s[i:], a) {
			continue
		}
		j := i + len(a)
		if j == len(s) {
			return len(a)
		}
		if r, _ := utf8.DecodeRuneInString(s[j:]); !pyIsWord(r) {
			return len(a)
		}
	}
	return 0
}

// SquadExactMatch is exact_match_score: normalized string equality, 1 or 0.
func SquadExactMatch(prediction, groundTruth string) float64 {
	if NormalizeAnswer(prediction) == NormalizeAnswer(groundTruth) {
		return 1
	}
	return 0
}

// SquadF1 is f1_score: the bag-of-tokens F1 of the normalized answers;
// 0 when they share no token, even if both are empty.
func SquadF1(prediction, groundTruth string) float64 {
	pred := pySplit(NormalizeAnswer(prediction))
	gold := pySplit(NormalizeAnswer(groundTruth))
	counts := make(map[string]int, len(gold))
	for _, t := range gold {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(pred))
	recall := float64(same) / float64(len(gold))
	return (2 * precision * recall) / (precision + recall)
}

// SquadScore is one question's score: the maximum EM and the maximum F1 over
// all ground truths (metric_max_over_ground_truths), each in [0, 1]. With no
// ground truth, both are 0.
func SquadScore(prediction string, groundTruths []string) (exactMatch, f1 float64) {
	for i, gt := range groundTruths {
		em, f := SquadExactMatch(prediction, gt), SquadF1(prediction, gt)
		if i == 0 || em > exactMatch {
			exactMatch = em
		}
		if i == 0 || f > f1 {
			f1 = f
		}
	}
	return exactMatch, f1
}

// SquadTotals accumulates per-question scores the way evaluate-v1.1.py does
// (plain sums in order) and reports them on its 0-100 scale.
type SquadTotals struct {
	ExactMatchSum, F1Sum float64
	Count                int
}

// Add records one question (a missing prediction is scored with Add(0, 0)).
func (t *SquadTotals) Add(exactMatch, f1 float64) {
	t.ExactMatchSum += exactMatch
	t.F1Sum += f1
	t.Count++
}

// Result returns 100 × mean EM and 100 × mean F1 (0, 0 for no questions).
func (t *SquadTotals) Result() (exactMatch, f1 float64) {
	if t.Count == 0 {
		return 0, 0
	}
	n := float64(t.Count)
	return 100.0 * t.ExactMatchSum / n, 100.0 * t.F1Sum / n
}
