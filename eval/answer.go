package eval

import (
	"strings"
)

// ExtractAnswer turns a generated assistant turn into the text that is
// scored: surrounding whitespace is trimmed and the prefix the model was
// trained to emit ("Answer:" for SQuAD, "Summary:" for XSum) is removed if
// present. A generation without the prefix is scored as it stands.
func ExtractAnswer(generated, prefix string) string {
	s := strings.TrimSpace(generated)
	if prefix != "" && strings.HasPrefix(s, prefix) {
		s = strings.TrimSpace(s[len(prefix):])
	}
	return s
}

// Prefixes the paper's chat formats put before the SQuAD and XSum answers.
const (
	AnswerPrefix  = "Answer:"
	SummaryPrefix = "Summary:"
)

// PredictLabel returns the index of the highest score; ties go to the lower
// index, so the choice never depends on evaluation order.
func PredictLabel(scores []float64) int {
	best := 0
	for i, s := range scores {
		if s > scores[best] {
			best = i
		}
	}
	return best
}

// Accuracy is the fraction of predictions equal to their labels (0 for none).
func Accuracy(predictions, labels []int) float64 {
	if len(predictions) == 0 {
		return 0
	}
	correct := 0
	for i, p := range predictions {
		if p == labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(predictions))
}
