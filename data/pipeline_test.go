package data

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tokenizer"
)

// fakeTok renders "<h>role\n" + content + "<e>" per message (plus "<h>assistant\n"
// for a generation prompt) and encodes bytes as ids, <h> as 1000 and <e> as 1001.
type fakeTok struct{}

func (fakeTok) RenderChat(msgs []tokenizer.Message, opt tokenizer.ChatOptions) (string, error) {
	var sb strings.Builder
	for _, m := range msgs {
		sb.WriteString("<h>" + m.Role + "\n" + m.Content + "<e>")
	}
	if opt.AddGenerationPrompt {
		sb.WriteString("<h>assistant\n")
	}
	return sb.String(), nil
}

func (f fakeTok) EncodeChat(msgs []tokenizer.Message, opt tokenizer.ChatOptions) (string, []int, error) {
	text, err := f.RenderChat(msgs, opt)
	return text, f.Encode(text, false), err
}

func (fakeTok) StopIDs() []int { return []int{1001} }

func TestEncodeSupervisesAssistantContentAndEndOfTurn(t *testing.T) {
	enc := &Encoder{Tok: fakeTok{}}
	for _, ex := range []Example{
		{Task: SST2, ID: "0", Sentence: "fun ", Label: 1},
		{Task: SQuAD, ID: "q", Title: "T", Context: "C", Question: "Q", Answers: []string{"A1", "A2"}},
		{Task: XSum, ID: "x", Document: "D", Summary: "S."},
	} {
		e, err := enc.Encode(ex)
		if err != nil {
			t.Fatal(err)
		}
		target, _ := Target(ex)
		start, end := e.Supervised()
		var sup []byte
		for _, id := range e.IDs[start : end-1] {
			sup = append(sup, byte(id))
		}
		if string(sup) != target || e.IDs[end-1] != 1001 || end != len(e.IDs) || start != e.PromptLen {
			t.Errorf("%s: supervised %q + %d, want %q + <e>", ex.Task, sup, e.IDs[end-1], target)
		}
		for i, l := range e.Labels {
			if (i >= start && i < end) != (l == e.IDs[i]) || (l != e.IDs[i] && l != IgnoreIndex) {
				t.Fatalf("%s: label %d at %d is wrong", ex.Task, l, i)
			}
		}
		sameBatch(t, e)
	}
	if _, err := enc.Encode(Example{Task: SST2, Label: 3}); err == nil {
		t.Error("label 3 accepted")
	}
}

func TestCandidates(t *testing.T) {
	lc, err := (&Encoder{Tok: fakeTok{}}).Candidates(Example{Task: SST2, Sentence: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for c, word := range SST2LabelWords {
		s := lc.Span[c]
		var got []byte
		for _, id := range lc.Full[c].IDs[s[0]:s[1]] {
			got = append(got, byte(id))
		}
		if string(got) != word {
			t.Errorf("candidate %d span = %q, want %q", c, got, word)
		}
	}
}

func TestBatches(t *testing.T) {
	a := Sequence{IDs: []int32{1, 2, 3}, Start: 1, End: 3}
	b := Sequence{IDs: []int32{4}, Start: 0, End: 1}
	tb := TrainBatch([]Sequence{a, b}, 0)
	want := Batch{Size: 2, Len: 3, IDs: []int{1, 2, 3, 4, 0, 0},
		Labels: []int{IgnoreIndex, 2, 3, 4, IgnoreIndex, IgnoreIndex}, Mask: []int{1, 1, 1, 1, 0, 0}}
	if !reflect.DeepEqual(tb, want) {
		t.Errorf("TrainBatch = %+v, want %+v", tb, want)
	}
	gb := GenerateBatch([][]int{{1, 2, 3}, {4}}, 9)
	wantG := Batch{Size: 2, Len: 3, IDs: []int{1, 2, 3, 9, 9, 4}, Mask: []int{1, 1, 1, 0, 0, 1}}
	if !reflect.DeepEqual(gb, wantG) {
		t.Errorf("GenerateBatch = %+v, want %+v", gb, wantG)
	}
}

func TestPermutationAndSplits(t *testing.T) {
	p := Permutation(1000, 0)
	if !reflect.DeepEqual(p, Permutation(1000, 0)) || reflect.DeepEqual(p, Permutation(1000, 1)) {
		t.Error("Permutation is not a deterministic function of the seed")
	}
	s := slices.Clone(p)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			t.Fatal("not a permutation")
		}
	}
	// SplitMix64's published first output for seed 0.
	if got := NewRand(0).Uint64(); got != 0xe220a8397b1dcdaf {
		t.Errorf("SplitMix64(0) = %#x, want 0xe220a8397b1dcdaf", got)
	}
	// Regression pin (our own output, not a reference): the paper's splits
	// depend on this draw, so a change to it must be deliberate.
	if got := Permutation(10, 0); !reflect.DeepEqual(got, []int{6, 3, 2, 9, 8, 1, 4, 7, 0, 5}) {
		t.Errorf("Permutation(10, 0) = %v changed", got)
	}
	for _, c := range []struct {
		n            int
		spec         SplitSpec
		train, valid int
	}{
		{67349, PaperSplits[SST2], 63981, 3368},
		{87599, PaperSplits[SQuAD], 50000, 1000},
		{100, SplitSpec{ValidationFraction: 0.05}, 95, 5},
	} {
		tr, va, err := TrainValidation(c.n, c.spec, 0)
		if err != nil || len(tr) != c.train || len(va) != c.valid {
			t.Errorf("n=%d: %d/%d, want %d/%d (%v)", c.n, len(tr), len(va), c.train, c.valid, err)
		}
		seen := map[int]bool{}
		for _, i := range append(slices.Clone(tr), va...) {
			if seen[i] {
				t.Fatalf("n=%d: index %d in both splits", c.n, i)
			}
			seen[i] = true
		}
	}
}

func TestSamplerResumes(t *testing.T) {
	s, err := NewSampler(10, 7)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]int
	var saved []byte
	for step := range 8 { // 8 batches of 3 = 2.4 epochs
		if step == 4 {
			saved, _ = json.Marshal(s.State())
		}
		all = append(all, s.Next(3))
	}
	// Each epoch visits every example once.
	var flat []int
	for _, b := range all {
		flat = append(flat, b...)
	}
	for e := range 2 {
		ep := slices.Clone(flat[e*10 : (e+1)*10])
		slices.Sort(ep)
		if !reflect.DeepEqual(ep, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Errorf("epoch %d = %v is not a permutation", e, flat[e*10:(e+1)*10])
		}
	}
	var st SamplerState
	if err := json.Unmarshal(saved, &st); err != nil {
		t.Fatal(err)
	}
	r, err := ResumeSampler(st)
	if err != nil {
		t.Fatal(err)
	}
	for step := 4; step < 8; step++ {
		if got := r.Next(3); !reflect.DeepEqual(got, all[step]) {
			t.Errorf("resumed batch %d = %v, want %v", step, got, all[step])
		}
	}
	if _, err := ResumeSampler(SamplerState{N: 3, Pos: 5}); err == nil {
		t.Error("invalid state accepted")
	}
}

// Encode is tokenizer.encode: <h> as 1000, <e> as 1001 (the added tokens),
// other bytes as ids, with special tokens a BOS 2 first (as OPT's tokenizer
// adds </s>).
func (fakeTok) Encode(text string, addSpecial bool) []int {
	var ids []int
	if addSpecial {
		ids = append(ids, 2)
	}
	for s := text; s != ""; {
		switch {
		case strings.HasPrefix(s, "<h>"):
			ids, s = append(ids, 1000), s[3:]
		case strings.HasPrefix(s, "<e>"):
			ids, s = append(ids, 1001), s[3:]
		default:
			ids, s = append(ids, int(s[0])), s[1:]
		}
	}
	return ids
}

// sameBatch: e as a Sequence gives the batch row of its ids and labels.
func sameBatch(t *testing.T, e Encoded) {
	t.Helper()
	s, err := e.Sequence()
	if err != nil {
		t.Fatal(err)
	}
	b := TrainBatch([]Sequence{s}, 0)
	if !slices.Equal(b.IDs, e.IDs) || !slices.Equal(b.Labels, e.Labels) {
		t.Errorf("as a Sequence: ids %v labels %v, want %v and %v", b.IDs, b.Labels, e.IDs, e.Labels)
	}
}

// TestSequenceRefuses: labels that are not one run of the ids (or not as
// many as the ids) are an error, not a batch trained on other tokens.
func TestSequenceRefuses(t *testing.T) {
	for _, e := range []Encoded{
		{IDs: []int{1, 2, 3}, Labels: []int{1, IgnoreIndex, 3}},
		{IDs: []int{1, 2, 3}, Labels: []int{IgnoreIndex, 5, 3}},
		{IDs: []int{1, 2, 3}, Labels: []int{IgnoreIndex, 2}},
		{IDs: []int{1, -7, 3}, Labels: []int{IgnoreIndex, -7, 3}},
	} {
		if s, err := e.Sequence(); err == nil {
			t.Errorf("%+v: Sequence() = %+v, want an error", e, s)
		}
	}
	s, err := Encoded{IDs: []int{1, 2, 3}, Labels: []int{IgnoreIndex, IgnoreIndex, IgnoreIndex}}.Sequence()
	if err != nil || s.Start != s.End {
		t.Errorf("no supervised token: %+v, %v; want an empty run", s, err)
	}
}
