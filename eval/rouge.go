package eval

import (
	"fmt"
	"slices"
	"strings"
)

// RougeScore is one ROUGE type's precision, recall and F-measure, in [0, 1].
type RougeScore struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	FMeasure  float64 `json:"fmeasure"`
}

// RougeScores are the four types rouge_score and HF evaluate report.
type RougeScores struct {
	Rouge1    RougeScore `json:"rouge1"`
	Rouge2    RougeScore `json:"rouge2"`
	RougeL    RougeScore `json:"rougeL"`
	RougeLsum RougeScore `json:"rougeLsum"`
}

// RougeTokenize is rouge_score's default tokenizer: Python lower(), every
// run of characters outside [a-z0-9] becomes a space, split on whitespace,
// Porter-stem tokens longer than 3 characters if stem is set, and keep the
// non-empty [a-z0-9]+ tokens.
func RougeTokenize(text string, stem bool) []string {
	tokens := rougeWords(text)
	if stem {
		stemWords(tokens)
	}
	return tokens
}

// rougeWords is RougeTokenize without the stemming.
func rougeWords(text string) []string {
	return strings.FieldsFunc(pyLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

// stemWords Porter-stems, in place, the tokens longer than 3 characters.
// Stems of [a-z0-9]+ tokens are non-empty [a-z0-9]+ tokens, so the final
// validity filter of rouge_score removes nothing, and the count stays.
func stemWords(tokens []string) {
	for i, t := range tokens {
		if len(t) > 3 {
			tokens[i] = PorterStem(t)
		}
	}
}

// MaxRougeTokens caps the tokens of a reference or a prediction that Rouge
// scores. ROUGE-L and ROUGE-Lsum need time proportional to the product of the
// two lengths (memory only linear in the shorter): at the cap about a
// second for ROUGE-L, and for ROUGE-Lsum from seconds to minutes depending
// on how the text splits into lines (20,000 one-word lines against as many:
// 5 s); beyond it Rouge returns an error instead of computing for hours. A
// 500 KB English text has about 90,000 tokens. A run leaves out, before it
// trains, the test examples with a reference past the cap (train's
// fitRouge).
const MaxRougeTokens = 200_000

// Rouge scores a prediction against one reference (rouge_score's
// RougeScorer(["rouge1","rouge2","rougeL","rougeLsum"]).score(target, prediction)).
// Texts over MaxRougeTokens tokens are an error.
func Rouge(reference, prediction string, stem bool) (RougeScores, error) {
	// The cap is checked before the stemming, the costly part of a long
	// text (stemming keeps the count).
	ref, pred := rougeWords(reference), rougeWords(prediction)
	for _, x := range []struct {
		what string
		n    int
	}{{"reference", len(ref)}, {"prediction", len(pred)}} {
		if x.n > MaxRougeTokens {
			return RougeScores{}, fmt.Errorf("rouge: the %s has %d tokens, over the cap of %d (MaxRougeTokens: ROUGE-L's time grows with the product of the lengths)",
				x.what, x.n, MaxRougeTokens)
		}
	}
	if stem {
		stemWords(ref)
		stemWords(pred)
	}
	return RougeScores{
		Rouge1:    scoreNgrams(ref, pred, 1),
		Rouge2:    scoreNgrams(ref, pred, 2),
		RougeL:    scoreLCS(ref, pred),
		RougeLsum: summaryLevelLCS(sentences(reference, stem), sentences(prediction, stem)),
	}, nil
}

// RougeMulti scores a prediction against several references as
// rouge_score's RougeScorer.score_multi does (what HF evaluate's rouge runs
// when a prediction has a list of references): each ROUGE type is that of
// the reference with the highest F-measure, the first one on a tie. No
// reference scores 0.
func RougeMulti(references []string, prediction string, stem bool) (RougeScores, error) {
	var best RougeScores
	for i, ref := range references {
		s, err := Rouge(ref, prediction, stem)
		if err != nil {
			return RougeScores{}, err
		}
		for _, t := range []struct{ best, s *RougeScore }{
			{&best.Rouge1, &s.Rouge1}, {&best.Rouge2, &s.Rouge2}, {&best.RougeL, &s.RougeL}, {&best.RougeLsum, &s.RougeLsum},
		} {
			if i == 0 || t.s.FMeasure > t.best.FMeasure {
				*t.best = *t.s
			}
		}
	}
	return best, nil
}

// fmeasure is rouge_score's scoring.fmeasure.
func fmeasure(precision, recall float64) float64 {
	if precision+recall > 0 {
		return 2 * precision * recall / (precision + recall)
	}
	return 0
}

// scoreNgrams is ROUGE-N with clipped n-gram counts.
func scoreNgrams(ref, pred []string, n int) RougeScore {
	refCounts, refTotal := ngrams(ref, n)
	predCounts, predTotal := ngrams(pred, n)
	overlap := 0
	for g, c := range refCounts {
		overlap += min(c, predCounts[g])
	}
	precision := float64(overlap) / float64(max(predTotal, 1))
	recall := float64(overlap) / float64(max(refTotal, 1))
	return RougeScore{precision, recall, fmeasure(precision, recall)}
}

// ngrams counts the n-grams of tokens (joined by a separator no token contains).
func ngrams(tokens []string, n int) (map[string]int, int) {
	counts := map[string]int{}
	total := 0
	for i := 0; i+n <= len(tokens); i++ {
		counts[strings.Join(tokens[i:i+n], " ")]++
		total++
	}
	return counts, total
}

// scoreLCS is ROUGE-L over the whole token sequences.
func scoreLCS(ref, pred []string) RougeScore {
	if len(ref) == 0 || len(pred) == 0 {
		return RougeScore{}
	}
	ids := map[string]int32{}
	lcs := lcsLength(intern(ref, ids), intern(pred, ids))
	precision := float64(lcs) / float64(len(pred))
	recall := float64(lcs) / float64(len(ref))
	return RougeScore{precision, recall, fmeasure(precision, recall)}
}

// sentences splits text on "\n", drops empty lines and tokenizes each (rougeLsum
// with split_summaries=False). A line of only punctuation stays, with no tokens.
func sentences(text string, stem bool) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			out = append(out, RougeTokenize(line, stem))
		}
	}
	return out
}

// summaryLevelLCS is rougeLsum: for each reference sentence, the union of its
// LCS with every candidate sentence, with per-token counts clipped so that no
// token is counted more often than it occurs on either side.
func summaryLevelLCS(refSents, canSents [][]string) RougeScore {
	// A line without tokens (only punctuation) has an empty LCS with every
	// line and adds nothing to m or n: leaving such lines out changes no
	// score, and bounds the pairs below by the tokens (MaxRougeTokens)
	// instead of the lines, which cost three bytes each (".\n").
	refSents = slices.DeleteFunc(slices.Clone(refSents), func(s []string) bool { return len(s) == 0 })
	canSents = slices.DeleteFunc(slices.Clone(canSents), func(s []string) bool { return len(s) == 0 })
	if len(refSents) == 0 || len(canSents) == 0 {
		return RougeScore{}
	}
	m, n := 0, 0
	refCounts, canCounts := map[string]int{}, map[string]int{}
	for _, s := range refSents {
		m += len(s)
		for _, t := range s {
			refCounts[t]++
		}
	}
	for _, s := range canSents {
		n += len(s)
		for _, t := range s {
			canCounts[t]++
		}
	}
	if m == 0 || n == 0 {
		return RougeScore{}
	}
	ids := map[string]int32{}
	cands := make([]*lcsCandidate, len(canSents))
	for i, c := range canSents {
		cands[i] = &lcsCandidate{can: intern(c, ids)}
	}
	hits := 0
	for _, r := range refSents {
		union := map[int]bool{}
		rIDs := intern(r, ids)
		for _, c := range cands {
			if len(union) == len(r) {
				break // every index of r is in the union already
			}
			for _, i := range c.indices(rIDs) {
				union[i] = true
			}
		}
		// Sorted union of indices, in reference order.
		for i := range r {
			if !union[i] {
				continue
			}
			t := r[i]
			if canCounts[t] > 0 && refCounts[t] > 0 {
				hits++
				canCounts[t]--
				refCounts[t]--
			}
		}
	}
	recall := float64(hits) / float64(m)
	precision := float64(hits) / float64(n)
	return RougeScore{precision, recall, fmeasure(precision, recall)}
}
