package train

import (
	"fmt"
	"math"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
)

// labelCandidates are the forwards that score a list of examples' label
// candidates, k labels an example, in order (scores[k·i+c]: example i's
// label c).
//
// Where the k renders of every example differ in one token each (SST-2's
// "terrible" and "great" do, as do most one-word labels), a sequence is the
// example's prompt up to that token, and the one forward of it scores all k
// as choices at its last position: the candidates' mean log-probability
// over their one label token, exactly what a forward of each whole render
// computes there (causal attention: the positions after it do not reach
// it), at about 1/k of the cost. Otherwise a sequence is one candidate's
// whole render.
type labelCandidates struct {
	labels  []string
	seqs    []data.Sequence
	choices [][]int // per sequence, the tokens it scores (per = k); nil: a sequence scores its own label tokens
	per     int     // scores per sequence: k or 1
}

// candidateSeqs are the label candidates of exs, each supervised on its
// label tokens (labels: the task's, the same for every example); what names
// an example in an error ("test example"). classify and train.objective
// accuracy (accuracyObjective) score them.
func (e *evaluator) candidateSeqs(exs []data.Example, what string) (labelCandidates, error) {
	cands := make([]data.Candidates, len(exs))
	oneToken := true
	for i, ex := range exs {
		cs, err := e.enc.Candidates(ex)
		if err != nil {
			return labelCandidates{}, err
		}
		cands[i] = cs
		for _, sp := range cs.Span {
			oneToken = oneToken && sp[1]-sp[0] == 1
		}
	}
	return buildCandidates(exs, cands, what, oneToken)
}

// buildCandidates makes the sequences of cands (exs' renders): one per
// example with its labels' tokens as choices when shared (every candidate
// one token), else one per candidate.
func buildCandidates(exs []data.Example, cands []data.Candidates, what string, shared bool) (labelCandidates, error) {
	var c labelCandidates
	for i, cs := range cands {
		c.labels = cs.Labels
		for l, s := range cs.Full {
			start, end := cs.Span[l][0], cs.Span[l][1]
			if shared {
				if l > 0 {
					c.choices[len(c.choices)-1] = append(c.choices[len(c.choices)-1], s.IDs[start])
					continue
				}
				end = start + 1
				c.choices = append(c.choices, []int{s.IDs[start]})
			}
			seq, err := data.NewSequence(s.IDs[:end], start, end)
			if err != nil {
				return c, fmt.Errorf("%s %q: %w", what, exs[i].ID, err)
			}
			c.seqs = append(c.seqs, seq)
		}
	}
	c.per = 1
	if shared && len(c.labels) > 0 { // no examples: no labels either
		c.per = len(c.labels)
	}
	return c, nil
}

// nonFiniteScore is scoreCandidates' error for a candidate (scores[i])
// whose loss is not finite.
type nonFiniteScore struct {
	i    int
	loss float64
}

func (e *nonFiniteScore) Error() string {
	return fmt.Sprintf("label candidate %d: the loss is not finite (%v)", e.i, e.loss)
}

// nonFiniteAnswer is the error of a classification's metric for an
// example (what: "test example", "validation example") whose answer label
// scores a loss that is not finite.
func nonFiniteAnswer(what, id, label string, loss float64) error {
	return fmt.Errorf("%s %q: the loss of its answer %q is not finite (%v): the model's weights or config.json hold values that make its arithmetic meaningless",
		what, id, label, loss)
}

// scoreCandidates is one batch of classify: c.seqs[lo:hi] in one forward of
// m, each candidate's score (the mean log-probability of its label tokens)
// into scores[lo·c.per:hi·c.per]. A score that is not finite is a
// *nonFiniteScore. classify and train.objective accuracy
// (accuracyObjective) both score through it, eval.batch_size sequences a
// forward.
func (e *evaluator) scoreCandidates(m *model.Model, c labelCandidates, lo, hi int, scores []float64) error {
	b := data.TrainBatch(c.seqs[lo:hi], e.padID)
	opts := model.Options{Labels: b.Labels}
	if c.choices != nil {
		opts.Choices = c.choices[lo:hi]
	}
	out, err := m.Forward(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, opts)
	if err != nil {
		return err
	}
	losses := [][]float64{out.LossPerSeq}
	if c.choices != nil {
		losses = out.ChoiceLoss
	}
	i := lo * c.per
	for _, ls := range losses {
		for _, l := range ls {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return &nonFiniteScore{i: i, loss: l}
			}
			scores[i] = -l // mean log-probability of the label tokens
			i++
		}
	}
	return nil
}
