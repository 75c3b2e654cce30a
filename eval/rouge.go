package eval

import "strings"

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
	text = pyLower(text)
	tokens := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	if stem {
		for i, t := range tokens {
			if len(t) > 3 {
				tokens[i] = PorterStem(t)
			}
		}
	}
	// Stems of [a-z0-9]+ tokens are non-empty [a-z0-9]+ tokens, so the
	// final validity filter of rouge_score removes nothing here.
	return tokens
}

// Rouge scores a prediction against one reference (rouge_score's
// RougeScorer(["rouge1","rouge2","rougeL","rougeLsum"]).score(target, prediction)).
func Rouge(reference, prediction string, stem bool) RougeScores {
	ref := RougeTokenize(reference, stem)
	pred := RougeTokenize(prediction, stem)
	return RougeScores{
		Rouge1:    scoreNgrams(ref, pred, 1),
		Rouge2:    scoreNgrams(ref, pred, 2),
		RougeL:    scoreLCS(ref, pred),
		RougeLsum: summaryLevelLCS(sentences(reference, stem), sentences(prediction, stem)),
	}
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

// lcsTable is the dynamic-programming table of longest common subsequence lengths.
func lcsTable(ref, can []string) [][]int {
	t := make([][]int, len(ref)+1)
	for i := range t {
		t[i] = make([]int, len(can)+1)
	}
	for i := 1; i <= len(ref); i++ {
		for j := 1; j <= len(can); j++ {
			if ref[i-1] == can[j-1] {
				t[i][j] = t[i-1][j-1] + 1
			} else {
				t[i][j] = max(t[i-1][j], t[i][j-1])
			}
		}
	}
	return t
}

// scoreLCS is ROUGE-L over the whole token sequences.
func scoreLCS(ref, pred []string) RougeScore {
	if len(ref) == 0 || len(pred) == 0 {
		return RougeScore{}
	}
	lcs := lcsTable(ref, pred)[len(ref)][len(pred)]
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

// lcsIndices returns the indices into ref of one LCS of ref and can, chosen
// by rouge_score's _backtrack_norec.
func lcsIndices(ref, can []string) []int {
	t := lcsTable(ref, can)
	var idx []int
	i, j := len(ref), len(can)
	for i > 0 && j > 0 {
		switch {
		case ref[i-1] == can[j-1]:
			idx = append(idx, i-1)
			i--
			j--
		case t[i][j-1] > t[i-1][j]:
			j--
		default:
			i--
		}
	}
	// Collected back to front.
	for a, b := 0, len(idx)-1; a < b; a, b = a+1, b-1 {
		idx[a], idx[b] = idx[b], idx[a]
	}
	return idx
}

// summaryLevelLCS is rougeLsum: for each reference sentence, the union of its
// LCS with every candidate sentence, with per-token counts clipped so that no
// token is counted more often than it occurs on either side.
func summaryLevelLCS(refSents, canSents [][]string) RougeScore {
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
	hits := 0
	for _, r := range refSents {
		union := map[int]bool{}
		for _, c := range canSents {
			for _, i := range lcsIndices(r, c) {
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
