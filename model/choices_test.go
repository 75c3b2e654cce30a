package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// choiceBatch is a right-padded batch of rows, each supervised at the
// position of its token sup[r] (-1: none), as a trainer's batch.
func choiceBatch(rows [][]int, sup []int) (Input, []int) { return choiceBatchTo(rows, sup, false) }

// choiceBatchTo is choiceBatch, with toEnd each row supervised from sup[r]
// to its end (an answer and its end-of-turn, as a validation example).
func choiceBatchTo(rows [][]int, sup []int, toEnd bool) (Input, []int) {
	t := 0
	for _, r := range rows {
		t = max(t, len(r))
	}
	in := Input{B: len(rows), T: t, Tokens: make([]int, len(rows)*t), Mask: make([]int, len(rows)*t)}
	labels := make([]int, len(rows)*t)
	for i := range labels {
		labels[i] = -100
	}
	for s, r := range rows {
		copy(in.Tokens[s*t:], r)
		for i := range r {
			in.Mask[s*t+i] = 1
		}
		for i := sup[s]; i >= 0 && i < len(r) && (toEnd || i == sup[s]); i++ {
			labels[s*t+i] = r[i]
		}
	}
	return in, labels
}

// TestChoicesScoreLikeTheirWholeSequences checks Options.Choices against
// what it replaces: k label candidates that differ in one token, each
// rendered whole (the prompt, the candidate, an end-of-turn after it) and
// scored by its own forward. One forward of the prompt ending in the first
// candidate, the k tokens scored as choices at its last position, gives
// every candidate's cross-entropy bit for bit on the CPU (causal attention:
// what follows a position never reaches it), through the loss-only path
// and through the one that computes every logit, for prompts of different
// lengths in one padded batch, with and without prompt tuning's virtual
// tokens before them, on configs small and wide enough for the
// kernels' blocking. So does a forward of the first candidate's whole
// render supervised from the candidate to its end (a validation
// example's), its choices scored at the first supervised position, and
// from two tokens before it (an answer's shared "Sentiment:"), its
// choices at the third (ChoiceAt).
func TestChoicesScoreLikeTheirWholeSequences(t *testing.T) {
	wide := tinyConfig("Qwen3ForCausalLM")
	wide.VocabSize, wide.HiddenSize, wide.IntermediateSize, wide.NumHeads, wide.NumKVHeads, wide.HeadDim = 700, 256, 512, 8, 4, 32
	for name, c := range map[string]*Config{"llama": tinyConfig("LlamaForCausalLM"), "qwen3-wide": wide} {
		t.Run(name, func(t *testing.T) {
			m, err := NewRandom(c, 5, 0.3)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			rng := rand.New(rand.NewPCG(1, 2))
			const b, k = 5, 3
			var prompts, whole, shared, answered [][]int
			var choices [][]int
			var wholeSup, sharedSup []int
			for range b {
				p := make([]int, 10+rng.IntN(80))
				for i := range p {
					p[i] = rng.IntN(c.VocabSize)
				}
				prompts = append(prompts, p)
				cs := rng.Perm(c.VocabSize)[:k]
				choices = append(choices, cs)
				for _, tok := range cs {
					whole = append(whole, append(append(append([]int(nil), p...), tok), 2, 7))
					wholeSup = append(wholeSup, len(p))
				}
				shared = append(shared, append(append([]int(nil), p...), cs[0]))
				answered = append(answered, whole[len(whole)-k])
				sharedSup = append(sharedSup, len(p))
			}
			win, wlabels := choiceBatch(whole, wholeSup)
			sin, slabels := choiceBatch(shared, sharedSup)
			ain, alabels := choiceBatchTo(answered, sharedSup, true)
			before, third := make([]int, b), make([]int, b)
			for s := range b {
				before[s], third[s] = sharedSup[s]-2, 2
			}
			pin, plabels := choiceBatchTo(answered, before, true)
			prompt := make([]float32, 4*c.HiddenSize)
			for i := range prompt {
				prompt[i] = float32(rng.NormFloat64())
			}
			for _, m.Prompt = range [][]float32{nil, prompt} { // prompt tuning's virtual tokens shift the positions
				want, err := m.Forward(win, Options{Labels: wlabels})
				if err != nil {
					t.Fatal(err)
				}
				for _, logits := range []bool{false, true} {
					got, err := m.Forward(sin, Options{Labels: slabels, Choices: choices, Logits: logits})
					if err != nil {
						t.Fatal(err)
					}
					for s := range b {
						for j := range k {
							if g, w := got.ChoiceLoss[s][j], want.LossPerSeq[s*k+j]; g != w {
								t.Errorf("prompt %v, logits %v: sequence %d choice %d: %v, its whole sequence's loss %v", m.Prompt != nil, logits, s, j, g, w)
							}
						}
						if got.LossPerSeq[s] != got.ChoiceLoss[s][0] {
							t.Errorf("logits %v: sequence %d: its label's loss %v, its first choice's (the label) %v", logits, s, got.LossPerSeq[s], got.ChoiceLoss[s][0])
						}
					}
					for _, v := range []struct {
						name   string
						in     Input
						labels []int
						at     []int
						tokens int
					}{{"from the candidate", ain, alabels, nil, 3 * b}, {"from two tokens before it", pin, plabels, third, 5 * b}} {
						ans, err := m.Forward(v.in, Options{Labels: v.labels, Choices: choices, ChoiceAt: v.at, Logits: logits})
						if err != nil {
							t.Fatal(err)
						}
						for s := range b {
							if !slices.Equal(ans.ChoiceLoss[s], got.ChoiceLoss[s]) {
								t.Errorf("prompt %v, logits %v: sequence %d answered, supervised %s: choices %v, the prompt's %v", m.Prompt != nil, logits, s, v.name, ans.ChoiceLoss[s], got.ChoiceLoss[s])
							}
						}
						if ans.Tokens != v.tokens {
							t.Errorf("supervised %s: %d tokens, want %d", v.name, ans.Tokens, v.tokens)
						}
					}
				}
				if want.LossPerSeq[0] == want.LossPerSeq[1] {
					t.Errorf("two candidates score alike (%v): the comparison says little", want.LossPerSeq[0])
				}
			}
		})
	}
}

// TestChoicesRefused lists the Options.Choices Forward refuses.
func TestChoicesRefused(t *testing.T) {
	m, err := NewRandom(tinyConfig("LlamaForCausalLM"), 5, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	in, labels := choiceBatch([][]int{{1, 2, 3, 4}, {5, 6, 7}}, []int{3, 2})
	_, none := choiceBatch([][]int{{1, 2, 3, 4}, {5, 6, 7}}, []int{3, -1}) // row 1: nothing supervised
	for _, c := range []struct {
		name    string
		labels  []int
		choices [][]int
		at      []int
		want    string
	}{
		{"no labels", nil, [][]int{{1}, {2}}, nil, "choices without labels"},
		{"one entry for two rows", labels, [][]int{{1, 2}}, nil, "choices has 1 entries, want one per sequence (2)"},
		{"no supervised position", none, [][]int{{1}, {2}}, nil, "sequence 1 has choices at its supervised token 0 (from 0), which it does not have"},
		{"past the supervised tokens", labels, [][]int{{1}, {2}}, []int{0, 1}, "sequence 1 has choices at its supervised token 1"},
		{"negative choice_at", labels, [][]int{{1}, {2}}, []int{-1, 0}, "sequence 0 has choices at its supervised token -1"},
		{"choice_at for one of two", labels, [][]int{{1}, {2}}, []int{0}, "choice_at has 1 entries, want one per sequence (2)"},
		{"choice_at without choices", labels, nil, []int{0, 0}, "choice_at without choices"},
		{"outside the vocabulary", labels, [][]int{{1}, {96}}, nil, "choices[1] holds 96, outside the vocabulary [0, 96)"},
		{"negative", labels, [][]int{{-1}, {2}}, nil, "choices[0] holds -1"},
	} {
		_, err := m.Forward(in, Options{Labels: c.labels, Choices: c.choices, ChoiceAt: c.at})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A sequence without choices needs no supervised position.
	out, err := m.Forward(in, Options{Labels: none, Choices: [][]int{{1, 2}, nil}})
	if err != nil || len(out.ChoiceLoss[0]) != 2 || len(out.ChoiceLoss[1]) != 0 {
		t.Errorf("choices for the supervised row only: %v, %v", out.ChoiceLoss, err)
	}
}
