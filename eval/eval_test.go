package eval

import (
	"math"
	"testing"
)

// These cases follow the semantics docs/ALGORITHMS.md's metric rules document for the official
// code; the fixture tests check the same against the real code's output.
func TestNormalizeAnswer(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"The Denver Broncos!", "denver broncos"},
		{"İstanbul", "i\u0307stanbul"},
		{"ΟΔΟΣ", "οδος"},                           // final sigma
		{"ΣΑ", "σα"},                               // sigma not final
		{"thé", "thé"},                             // \b is Unicode-aware
		{"éthe", "éthe"},                           //
		{"a\u0301 b", "\u0301 b"},                  // a combining mark is a non-word rune
		{"x\u00a0y\u001cz\u200bw", "x y z\u200bw"}, // Python split(): NBSP and \x1c split, ZWSP does not
		{"an apple", "apple"},
		{"“quoted” – dash", "“quoted” – dash"}, // Unicode punctuation stays
	} {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSquadScore(t *testing.T) {
	for _, c := range []struct {
		pred   string
		gts    []string
		em, f1 float64
	}{
		{"the", []string{"a"}, 1, 0}, // both normalize to "": EM 1, F1 0
		{"Denver Broncos", []string{"Broncos", "Denver Broncos"}, 1, 1},
		{"Denver", []string{"Denver Broncos"}, 0, 2 * 1 * 0.5 / 1.5},
		{"x", nil, 0, 0},
	} {
		em, f1 := SquadScore(c.pred, c.gts)
		if em != c.em || math.Abs(f1-c.f1) > 1e-15 {
			t.Errorf("SquadScore(%q, %q) = %v, %v; want %v, %v", c.pred, c.gts, em, f1, c.em, c.f1)
		}
	}
}

func TestPorterStem(t *testing.T) {
	// Known outputs of NLTK's PorterStemmer() (NLTK_EXTENSIONS).
	for in, want := range map[string]string{
		"skies": "sky", "dying": "die", "caresses": "caress", "ponies": "poni", "ties": "tie",
		"cats": "cat", "feed": "feed", "agreed": "agre", "plastered": "plaster", "motoring": "motor",
		"hopping": "hop", "filing": "file", "happy": "happi", "enjoy": "enjoy", "relational": "relat",
		"generalization": "gener", "organisers": "organis", "festival": "festiv", "coventry": "coventri",
		"spied": "spi", "died": "die", "news": "news", "running": "run", "cancelled": "cancel",
	} {
		if got := PorterStem(in); got != want {
			t.Errorf("PorterStem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRougeBasics(t *testing.T) {
	if got := RougeTokenize("Naïve café, 40,000 visitors!", false); len(got) != 6 {
		t.Errorf("RougeTokenize split accented letters wrongly: %q", got)
	}
	s, err := Rouge("the cat sat on the mat", "the cat sat", false)
	if err != nil || s.Rouge1.Precision != 1 || s.Rouge1.Recall != 0.5 || s.RougeL.Recall != 0.5 || s.Rouge2.Precision != 1 {
		t.Errorf("Rouge = %+v", s)
	}
	if z, err := Rouge("", "anything", false); err != nil || z != (RougeScores{}) {
		t.Errorf("empty reference gives %+v, want zeros", z)
	}
}

// TestRougeMulti: with several references each ROUGE type is the one of
// the reference with the highest F-measure (rouge_score's score_multi),
// here the first reference's ROUGE-1 and the second's ROUGE-2 and ROUGE-L.
func TestRougeMulti(t *testing.T) {
	pred := "the cat sat on the mat"
	refs := []string{"mat the on sat cat the", "the cat sat"}
	a, _ := Rouge(refs[0], pred, false)
	b, _ := Rouge(refs[1], pred, false)
	if !(a.Rouge1.FMeasure > b.Rouge1.FMeasure && b.Rouge2.FMeasure > a.Rouge2.FMeasure && b.RougeL.FMeasure > a.RougeL.FMeasure) {
		t.Fatalf("the references do not each win a type: %+v, %+v", a, b)
	}
	got, err := RougeMulti(refs, pred, false)
	want := RougeScores{Rouge1: a.Rouge1, Rouge2: b.Rouge2, RougeL: b.RougeL, RougeLsum: b.RougeLsum}
	if err != nil || got != want {
		t.Errorf("RougeMulti = %+v, %v; want %+v", got, err, want)
	}
	if one, err := RougeMulti(refs[1:], pred, false); err != nil || one != b {
		t.Errorf("one reference: %+v, want Rouge's %+v", one, b)
	}
	if none, err := RougeMulti(nil, pred, false); err != nil || none != (RougeScores{}) {
		t.Errorf("no reference: %+v, want zeros", none)
	}
}

func TestExtractAndLabels(t *testing.T) {
	if got := ExtractAnswer("  Answer: Denver Broncos \n", AnswerPrefix); got != "Denver Broncos" {
		t.Errorf("ExtractAnswer = %q", got)
	}
	if got := ExtractAnswer("Denver", AnswerPrefix); got != "Denver" {
		t.Errorf("ExtractAnswer without prefix = %q", got)
	}
	scores := []float64{-2, -1.5}
	if PredictLabel(scores) != 1 || PredictLabel([]float64{-1, -1}) != 0 {
		t.Errorf("PredictLabel wrong for %v", scores)
	}
	if a := Accuracy([]int{1, 0, 1, 1}, []int{1, 1, 1, 0}); a != 0.5 {
		t.Errorf("Accuracy = %v", a)
	}
}
