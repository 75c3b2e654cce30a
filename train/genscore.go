package train

import (
	"fmt"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
)

// The scores of a generated answer, by task (docs/ALGORITHMS.md's metric
// rules): SQuAD's EM and F1 against its answers, XSum's ROUGE against its
// summary, and for generation both against the completion and the row's
// references, each the best over them (SQuAD's rule for EM and F1,
// rouge_score's score_multi for ROUGE).

// answerPrefix is what the task's answers start with ("Answer:",
// "Summary:"), removed from a generation before it is scored; generation's
// completions are the user's, with none.
func answerPrefix(task data.Task) string {
	switch task {
	case data.SQuAD:
		return eval.AnswerPrefix
	case data.XSum:
		return eval.SummaryPrefix
	}
	return ""
}

// scoreGenerated adds the scores of pred, the answer generated for ex, to
// sums (evalPartial's: SQuAD EM, F1; XSum the ROUGE-1, -2, -L, -Lsum
// F-measures; generation EM, F1, then the four ROUGE ones).
func (e *evaluator) scoreGenerated(ex data.Example, pred string, sums []float64) error {
	switch e.task {
	case data.SQuAD:
		em, f1 := eval.SquadScore(pred, ex.Answers)
		sums[0] += em
		sums[1] += f1
	case data.XSum:
		s, err := eval.Rouge(ex.Summary, pred, e.rougeStem)
		if err != nil {
			return fmt.Errorf("XSum example %q: %w", ex.ID, err)
		}
		addRouge(sums, s)
	case data.Generation:
		refs := append([]string{ex.Completion}, ex.References...)
		em, f1 := eval.SquadScore(pred, refs)
		sums[0] += em
		sums[1] += f1
		s, err := eval.RougeMulti(refs, pred, e.rougeStem)
		if err != nil {
			return fmt.Errorf("test example %q: %w", ex.ID, err)
		}
		addRouge(sums[2:], s)
	default:
		return fmt.Errorf("task %s is not scored by generation", e.task)
	}
	return nil
}

// addRouge adds the four ROUGE F-measures of s to sums.
func addRouge(sums []float64, s eval.RougeScores) {
	sums[0] += s.Rouge1.FMeasure
	sums[1] += s.Rouge2.FMeasure
	sums[2] += s.RougeL.FMeasure
	sums[3] += s.RougeLsum.FMeasure
}

// generatedMetrics are the metrics of n examples from their sums
// (scoreGenerated's), 0-100: SQuAD {"exact_match","f1"}, XSum
// {"rouge1","rouge2","rougeL","rougeLsum"}, generation all six.
func (e *evaluator) generatedMetrics(sums []float64, n int) map[string]float64 {
	out := map[string]float64{}
	rouge := sums
	if e.task != data.XSum {
		squad := eval.SquadTotals{ExactMatchSum: sums[0], F1Sum: sums[1], Count: n}
		out["exact_match"], out["f1"] = squad.Result()
		rouge = sums[2:]
	}
	if e.task != data.SQuAD {
		for i, key := range []string{"rouge1", "rouge2", "rougeL", "rougeLsum"} {
			out[key] = 100 * rouge[i] / float64(n)
		}
	}
	return out
}
