package train

import (
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
)

// scoreAll scores every candidate of c on m, batch sequences a forward.
func scoreAll(t *testing.T, e *evaluator, m *model.Model, c labelCandidates, n int) []float64 {
	t.Helper()
	scores := make([]float64, n*len(c.labels))
	for lo := 0; lo < len(c.seqs); lo += e.batchSize {
		if err := e.scoreCandidates(m, c, lo, min(lo+e.batchSize, len(c.seqs)), scores); err != nil {
			t.Fatal(err)
		}
	}
	return scores
}

// candidateEvaluator is an evaluator of task's label candidates rendered
// in format, batch sequences a forward.
func candidateEvaluator(tok *tokenizer.Tokenizer, task data.Task, format data.Format, batch int) *evaluator {
	enc := &data.Encoder{Tok: tok, DateString: tokenizer.DefaultDateString, Format: format}
	return &evaluator{task: task, tok: tok, enc: enc, batchSize: batch, padID: tok.PadID(), log: io.Discard}
}

// TestSharedCandidatesScoreAsWhole checks labelCandidates' one forward of
// each example's prompt against a forward of each candidate's whole render
// (the way every candidate was scored before), on the demo's SST-2 in both
// formats and with a LoRA adapter attached: the scores are the same bits
// on the CPU, in batches that put examples of different lengths together.
// The demo's SST-2 labels are one token each, so candidateSeqs takes the
// shared form; its classification labels ("negative", "positive") are not,
// and it keeps one forward per candidate.
func TestSharedCandidatesScoreAsWhole(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	m, tok := demoModel(t, dir)
	exs, _ := accBatch(t, dir, data.SST2, 24)
	for _, format := range []data.Format{data.FormatChat, data.FormatMeZO} {
		e := candidateEvaluator(tok, data.SST2, format, 5)
		shared, err := e.candidateSeqs(exs, "test example")
		if err != nil {
			t.Fatal(err)
		}
		if shared.per != 2 || len(shared.seqs) != len(exs) {
			t.Fatalf("%s: %d sequences scoring %d candidates each, want one per example (%d) scoring both", format, len(shared.seqs), shared.per, len(exs))
		}
		cands := make([]data.Candidates, len(exs))
		for i, ex := range exs {
			if cands[i], err = e.enc.Candidates(ex); err != nil {
				t.Fatal(err)
			}
		}
		whole, err := buildCandidates(exs, cands, "test example", false)
		if err != nil {
			t.Fatal(err)
		}
		la := demoLoRA(t, m)
		params := perturbedParams(rand.New(rand.NewPCG(3, 4)), la.Params(), 0.5)
		for _, p := range [][][]float32{nil, params} { // nil: no adapter
			var got, want []float64
			err := withAdapter(m, la, p, false, func(m *model.Model) error {
				got, want = scoreAll(t, e, m, shared, len(exs)), scoreAll(t, e, m, whole, len(exs))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, LoRA %v: shared scores %v, whole %v", format, p != nil, got, want)
			}
			if got[0] == got[1] {
				t.Errorf("%s: both candidates score %v: the comparison says little", format, got[0])
			}
		}
	}

	own, _ := accBatch(t, dir, data.Classification, 4)
	c, err := candidateEvaluator(tok, data.Classification, data.FormatChat, 5).candidateSeqs(own, "test example")
	if err != nil {
		t.Fatal(err)
	}
	if c.per != 1 || len(c.seqs) != 2*len(own) {
		t.Errorf("labels of several tokens: %d sequences scoring %d each, want one per candidate (%d)", len(c.seqs), c.per, 2*len(own))
	}
}

// TestSharedCandidatesRealTokenizers checks that the shared form is the one
// SST-2 takes with the real Llama-3.2 and Qwen3 tokenizers and chat
// templates ("terrible" and "great" one token each after the assistant
// header), and with MeZO's format (" terrible", " great").
func TestSharedCandidatesRealTokenizers(t *testing.T) {
	exs, _, err := data.ReadAll(filepath.Join(fixture.Dir(t, "data", "sst2"), "dev.tsv"), data.SST2, data.ReadOptions{Strict: true, Limit: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"llama3.2", "qwen3"} {
		tok, err := tokenizer.Load(fixture.Dir(t, "fixtures", "tokenizers", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []data.Format{data.FormatChat, data.FormatMeZO} {
			c, err := candidateEvaluator(tok, data.SST2, format, 8).candidateSeqs(exs, "test example")
			if err != nil {
				t.Fatal(err)
			}
			if c.per != 2 {
				t.Errorf("%s, %s: SST-2's candidates take a forward each, want one forward an example", name, format)
			}
		}
	}
}

// TestCandidateForwards: the projection counts a forward per test example
// where its label candidates share one (SST-2's), and one per label where
// they do not (the demo's classification labels, several tokens each).
func TestCandidateForwards(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	_, tok := demoModel(t, dir)
	for _, tc := range []struct {
		task data.Task
		want int
	}{{data.SST2, 1}, {data.Classification, 2}} {
		exs, _ := accBatch(t, dir, tc.task, 2)
		e := candidateEvaluator(tok, tc.task, data.FormatChat, 4)
		r := &run{modality: &textTask{data: &textSplits{test: exs}, eval: e}}
		if got := r.candidateForwards(); got != tc.want {
			t.Errorf("%s: %d forwards a test example, want %d", tc.task, got, tc.want)
		}
	}
}
