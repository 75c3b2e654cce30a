package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// supervisedCE is the cross-entropy at every supervised row against its
// label, then, with choices, at each sequence's choice row (choiceRows)
// against each of its choices. h is the final hidden states: of the
// supervised rows alone (kept), else of every position; logits, when
// Forward computed them all, are read instead. The choices share their
// row's one LM-head product.
func (m *Model) supervisedCE(h, logits tensor.Buf, sup supervision, kept bool, choices [][]int, at []int) []float64 {
	be := m.Backend
	idx, targets := indices(len(sup.rows)), sup.targets
	row := choiceRows(sup, len(choices), at)
	for s, cs := range choices {
		for _, c := range cs {
			idx, targets = append(idx, row[s]), append(targets, c)
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

// choiceRows is, for each of the first b sequences, the index in sup of
// the supervised row its choices are scored at: its at[s]-th (at nil: its
// first); -1 where it has not that many.
func choiceRows(sup supervision, b int, at []int) []int {
	row, seen := make([]int, b), make([]int, b)
	for s := range row {
		row[s] = -1
	}
	for i, s := range sup.seqOf {
		if s >= b {
			continue
		}
		if seen[s] == choiceAt(at, s) {
			row[s] = i
		}
		seen[s]++
	}
	return row
}

// choiceAt is at[s], 0 where at is nil.
func choiceAt(at []int, s int) int {
	if at == nil {
		return 0
	}
	return at[s]
}

// checkChoices refuses Options.Choices and ChoiceAt that Forward cannot
// score: one entry each per sequence, a token of the vocabulary each, and
// the supervised position ChoiceAt names in every sequence with choices.
func (m *Model) checkChoices(choices [][]int, at []int, sup supervision, b int) error {
	if len(choices) != b {
		return fmt.Errorf("choices has %d entries, want one per sequence (%d)", len(choices), b)
	}
	if at != nil && len(at) != b {
		return fmt.Errorf("choice_at has %d entries, want one per sequence (%d)", len(at), b)
	}
	row := choiceRows(sup, b, at)
	for s, cs := range choices {
		if len(cs) > 0 && row[s] < 0 {
			return fmt.Errorf("sequence %d has choices at its supervised token %d (from 0), which it does not have", s, choiceAt(at, s))
		}
		for _, c := range cs {
			if c < 0 || c >= m.VocabSize {
				return fmt.Errorf("choices[%d] holds %d, outside the vocabulary [0, %d)", s, c, m.VocabSize)
			}
		}
	}
	return nil
}
