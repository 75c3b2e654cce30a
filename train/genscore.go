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

// exampleScores are the scores of pred, the answer generated for ex, in
// the order of evalPartial's sums (generatedKeys'): SQuAD EM, F1; XSum the
// ROUGE-1, -2, -L, -Lsum F-measures; generation EM, F1, then the four ROUGE
// ones.
func (e *evaluator) exampleScores(ex data.Example, pred string) ([]float64, error) {
	refs := references(e.task, ex)
	switch e.task {
	case data.SQuAD:
		em, f1 := eval.SquadScore(pred, refs)
		return []float64{em, f1}, nil
	case data.XSum:
		s, err := eval.Rouge(ex.Summary, pred, e.rougeStem)
		if err != nil {
			return nil, fmt.Errorf("XSum example %q: %w", ex.ID, err)
		}
		return rougeFs(s), nil
	case data.Generation:
		em, f1 := eval.SquadScore(pred, refs)
		s, err := eval.RougeMulti(refs, pred, e.rougeStem)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", e.example(), ex.ID, err)
		}
		return append([]float64{em, f1}, rougeFs(s)...), nil
	}
	return nil, fmt.Errorf("task %s is not scored by generation", e.task)
}

// scoreGenerated adds the scores of pred, the answer generated for ex, to
// sums (evalPartial's, in exampleScores' order), and hands its record to
// e.record if there is one.
func (e *evaluator) scoreGenerated(ex data.Example, pred string, sums []float64) error {
	scores, err := e.exampleScores(ex, pred)
	if err != nil {
		return err
	}
	for i, s := range scores {
		sums[i] += s
	}
	if e.record != nil {
		e.record(generatedPrediction(e.task, ex, pred, scores))
	}
	return nil
}

// rougeFs are the four ROUGE F-measures of s.
func rougeFs(s eval.RougeScores) []float64 {
	return []float64{s.Rouge1.FMeasure, s.Rouge2.FMeasure, s.RougeL.FMeasure, s.RougeLsum.FMeasure}
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
		for i, key := range generatedKeys(data.XSum) {
			out[key] = 100 * rouge[i] / float64(n)
		}
	}
	return out
}
