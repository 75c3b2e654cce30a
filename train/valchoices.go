package train

import (
	"math"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
)

// valChoices lets a classification's validation accuracy
// (eval.validation_metrics) come from the validation loss's own forwards,
// as an image task's does: where every label candidate of a metric example
// is one token (SST-2's "terrible" and "great"), the test evaluation's rule
// scores them all at the one position that predicts the label
// (labelCandidates), and the validation loss's forward of the example
// answered with its own label computes that position too, the same bits on
// the CPU (causal attention: the answer and end-of-turn after it do not
// reach it; a row's product does not depend on the others in the batch).
// So the loss's forward scores the candidates there as well
// (model.Options.Choices in place of the label's token, ChoiceAt) and a
// validation takes one pass instead of two. On a GPU the libraries may
// choose another algorithm for the loss's batch shapes than for the
// metric's own, so a near tie may fall the other way in the last bits.
//
// A plan is all or nothing: where a candidate is several tokens, or an
// example has no validation sequence that begins as its candidates do (a
// prompt the length rule cut, say), the metric runs its own pass as before.
type valChoices struct {
	valEx []data.Example // the metric's examples, a subsequence of the validation split's in its order
	// choices[i] is the label candidates' tokens validation sequence i
	// scores in place of its label's token, its at[i]-th supervised token,
	// in label order; nil: it is no metric example's.
	choices [][]int
	at      []int
	example []int    // per validation sequence: its example's index in valEx, or -1
	labels  []string // the task's labels, for errors
	acc     valAccuracy
}

// newValChoices is the plan of scoring the metric examples exs from the
// forwards of the validation sequences val, or nil where there is none:
// the task is not scored by label candidates, a candidate is more than one
// token, or an example has no validation sequence that is its candidates'
// prompt and then its own label's token, supervised.
func newValChoices(e *evaluator, val []data.Sequence, exs []data.Example) *valChoices {
	if e.task.Generates() || e.enc == nil || len(exs) == 0 {
		return nil
	}
	c := &valChoices{valEx: exs, choices: make([][]int, len(val)), at: make([]int, len(val)), example: make([]int, len(val))}
	for i := range c.example {
		c.example[i] = -1
	}
	i := 0
	for j, ex := range exs {
		cs, err := e.enc.Candidates(ex)
		if err != nil { // the metric's own pass says what is wrong, where
			return nil
		}
		start := cs.Span[0][0]
		if ex.Label < 0 || ex.Label >= len(cs.Span) {
			return nil
		}
		toks := make([]int, len(cs.Span))
		for l, sp := range cs.Span {
			if sp[0] != start || sp[1] != start+1 {
				return nil
			}
			toks[l] = cs.Full[l].IDs[start]
		}
		for i < len(val) && !answers(val[i], cs.Full[0].IDs[:start], toks[ex.Label]) {
			i++
		}
		if i == len(val) {
			return nil
		}
		c.choices[i], c.at[i], c.example[i], c.labels = toks, start-int(val[i].Start), j, cs.Labels
		i++
	}
	return c
}

// answers reports whether s is prompt followed by label, the label's token
// supervised (the tokens before it may be too: an answer's "Sentiment:").
func answers(s data.Sequence, prompt []int, label int) bool {
	n := len(prompt)
	if n < int(s.Start) || n >= int(s.End) || int(s.IDs[n]) != label {
		return false
	}
	for k, id := range prompt {
		if int(s.IDs[k]) != id {
			return false
		}
	}
	return true
}

// count adds the metric examples among the validation sequences from lo on
// (ce: their forward's Output.ChoiceLoss) whose best-scoring label, by the
// test evaluation's rule (eval.PredictLabel over the mean log-probability,
// here of one token), is their own; an error is the one the metric's own
// pass would have stopped at.
func (c *valChoices) count(ce [][]float64, lo int) {
	for s, ls := range ce {
		j := c.example[lo+s]
		if j < 0 || c.acc.err != nil {
			continue
		}
		scores := make([]float64, len(ls))
		for l, v := range ls {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				c.acc.err = nonFiniteAnswer("validation example", c.valEx[j].ID, c.labels[l], v)
				return
			}
			scores[l] = -v
		}
		if eval.PredictLabel(scores) == c.valEx[j].Label {
			c.acc.right++
		}
	}
}
