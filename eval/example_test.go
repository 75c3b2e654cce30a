package eval_test

import (
	"fmt"

	"github.com/meazo-go/meazo/eval"
)

// SQuAD v1.1 scored as evaluate-v1.1.py scores it: each generated answer,
// its "Answer:" prefix removed, against every annotator's answer (the best
// exact match and the best token F1 after normalisation: lower case, no
// punctuation or articles), then the means on a 0-100 scale.
func ExampleSquadScore() {
	questions := []struct {
		generated string
		answers   []string
	}{
		{"Answer: the Denver Broncos", []string{"Denver Broncos", "Broncos"}},
		{"Answer: Santa Clara, California", []string{"Levi's Stadium", "Santa Clara, California"}},
		{"Answer: in February 2016", []string{"February 7, 2016"}},
		{"I do not know.", []string{"gold"}},
	}
	var totals eval.SquadTotals
	for _, q := range questions {
		pred := eval.ExtractAnswer(q.generated, eval.AnswerPrefix)
		em, f1 := eval.SquadScore(pred, q.answers)
		fmt.Printf("%-28q EM %.0f  F1 %.3f\n", pred, em, f1)
		totals.Add(em, f1)
	}
	em, f1 := totals.Result()
	fmt.Printf("exact match %.2f, F1 %.2f over %d questions\n", em, f1, totals.Count)
	// Output:
	// "the Denver Broncos"         EM 1  F1 1.000
	// "Santa Clara, California"    EM 1  F1 1.000
	// "in February 2016"           EM 0  F1 0.667
	// "I do not know."             EM 0  F1 0.000
	// exact match 50.00, F1 66.67 over 4 questions
}
