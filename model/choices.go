package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// supervisedCE is the cross-entropy at every supervised row against its
// label, then, with choices, at each sequence's supervised row against each
// of its choices. h is the final hidden states: of the supervised rows
// alone (kept), else of every position; logits, when Forward computed them
// all, are read instead. The choices share their row's one LM-head product.
func (m *Model) supervisedCE(h, logits tensor.Buf, sup supervision, kept bool, choices [][]int) []float64 {
	be := m.Backend
	idx, targets := indices(len(sup.rows)), sup.targets
	for s, cs := range choices { // s's one supervised row is its s-th
		for _, c := range cs {
			idx, targets = append(idx, s), append(targets, c)
		}
	}
	if logits != nil {
		rows := make([]int, len(idx))
		for j, i := range idx {
			rows[j] = sup.rows[i]
		}
		return be.CrossEntropy(logits, m.VocabSize, rows, targets)
	}
	if !kept {
		sel := be.Alloc(len(sup.rows) * m.embedDim())
		defer be.Free(sel)
		be.Gather(sel, h, m.embedDim(), sup.rows)
		h = sel
	}
	head := m.headLogits(h, len(sup.rows), nil)
	defer be.Free(head)
	return be.CrossEntropy(head, m.VocabSize, idx, targets)
}

// splitChoices cuts the choices' cross-entropies, in order, into one slice
// per sequence.
func splitChoices(ce []float64, choices [][]int) [][]float64 {
	out := make([][]float64, len(choices))
	for s, cs := range choices {
		out[s], ce = ce[:len(cs)], ce[len(cs):]
	}
	return out
}

// checkChoices refuses Options.Choices that Forward cannot score: one
// entry per sequence, a token of the vocabulary each, and exactly one
// supervised position in every sequence (supervisedCE reads sequence s's
// choices at the s-th supervised row).
func (m *Model) checkChoices(choices [][]int, sup supervision, b int) error {
	if len(choices) != b {
		return fmt.Errorf("choices has %d entries, want one per sequence (%d)", len(choices), b)
	}
	count := make([]int, b)
	for _, s := range sup.seqOf {
		count[s]++
	}
	for s, cs := range choices {
		if count[s] != 1 {
			return fmt.Errorf("sequence %d has %d supervised positions: choices need exactly one", s, count[s])
		}
		for _, c := range cs {
			if c < 0 || c >= m.VocabSize {
				return fmt.Errorf("choices[%d] holds %d, outside the vocabulary [0, %d)", s, c, m.VocabSize)
			}
		}
	}
	return nil
}
