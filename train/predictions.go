package train

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/atomicfile"
)

// Prediction is what the model made of one test example, for a user to
// read which examples it gets wrong (meazo-eval task --predictions writes
// one per line). Evaluate and EvaluateImages hand them to
// EvalOptions.OnPrediction in the data's order, each as it is scored, by
// the code that computes the aggregate metrics, so that the records and the
// metrics cannot disagree.
//
// A generation task's record holds a *Generated, a label task's a
// *Labelled; the other pointer is nil, and its fields are absent from the
// JSON.
type Prediction struct {
	// ID is the example's id: the dataset's (SQuAD's id, XSum's id, SST-2's
	// idx), a row's "id" in your own data, a Pets image's image_id; for a
	// row without one its place in the file: its 0-based row in a TSV or
	// Parquet file, "line N" in JSON Lines, "data[A].paragraphs[P].qas[Q]"
	// in SQuAD's JSON.
	ID string `json:"id"`
	Input
	*Generated
	*Labelled
}

// Answers are Prediction records as JSON lines, one per example in the
// order they are recorded, held in memory for a file written whole once the
// evaluation ends (meazo-eval task --predictions; a run's
// predictions_*.jsonl), so that a failed or interrupted evaluation leaves
// no file and no half of one. A nil *Answers records nothing.
type Answers struct {
	buf bytes.Buffer
	n   int   // records in buf
	err error // the first record that did not encode
}

// Recorder is an EvalOptions.OnPrediction that appends each record to a;
// nil for a nil a.
func (a *Answers) Recorder() func(Prediction) {
	if a == nil {
		return nil
	}
	enc := json.NewEncoder(&a.buf)
	enc.SetEscapeHTML(false) // the texts as they are, for reading: "<", not "\u003c"
	return func(p Prediction) {
		if err := enc.Encode(p); err != nil && a.err == nil {
			a.err = fmt.Errorf("example %q: its record: %w", p.ID, err)
		}
		a.n++
	}
}

// Len is the number of records.
func (a *Answers) Len() int { return a.n }

// WriteFile writes the records to path, replacing it atomically; a record
// that did not encode is the error instead.
func (a *Answers) WriteFile(path string) error {
	if a.err != nil {
		return a.err
	}
	return atomicfile.WriteFile(path, a.buf.Bytes())
}

// Input is the example's input as its task has it; the fields of the other
// tasks are empty and absent from the JSON.
type Input struct {
	Sentence string `json:"sentence,omitempty"` // SST-2
	Text     string `json:"text,omitempty"`     // classification
	Question string `json:"question,omitempty"` // SQuAD: the question and its context
	Context  string `json:"context,omitempty"`
	Document string `json:"document,omitempty"` // XSum
	Prompt   string `json:"prompt,omitempty"`   // generation
	Image    *int   `json:"image,omitempty"`    // Pets: the image's 0-based row in the Parquet file
}

// Generated is a generation task's answer and its scores.
type Generated struct {
	// Text is the generated answer exactly as it was scored: decoded
	// without special tokens, trimmed, with the "Answer:" (SQuAD) or
	// "Summary:" (XSum) prefix removed.
	Text string `json:"generated"`
	// References are what it was scored against: SQuAD's answers, XSum's
	// summary, a generation's completion and then its references.
	References []string `json:"references"`
	// Scores are the example's own metrics in 0-1, under the aggregate's
	// keys: SQuAD exact_match and f1 (the best over the references), XSum
	// rouge1, rouge2, rougeL and rougeLsum F-measures, a generation all six.
	// Each aggregate metric is 100 × their mean over the records.
	Scores map[string]float64 `json:"scores"`
}

// Labelled is a label task's answer: the label with the highest score
// (the mean log-probability of its answer tokens; Pets: the logit) against
// the gold one.
type Labelled struct {
	// Predicted and Gold are label indices: SST-2's 0 (negative) or 1
	// (positive), as its file has them; a classification's index in its
	// labels (--labels, task.labels); a Pets class.
	Predicted int `json:"predicted"`
	Gold      int `json:"gold"`
	// PredictedLabel and GoldLabel are the text tasks' answers for them
	// (SST-2's "terrible" or "great", a classification's labels); Pets has
	// none.
	PredictedLabel string `json:"predicted_label,omitempty"`
	GoldLabel      string `json:"gold_label,omitempty"`
	Correct        bool   `json:"correct"`
}

// generatedKeys are the metric keys of a generation task, in the order of
// its running sums (evalPartial's): SQuAD EM, F1; XSum the four ROUGE
// F-measures; generation both.
func generatedKeys(task data.Task) []string {
	squad := []string{"exact_match", "f1"}
	rouge := []string{"rouge1", "rouge2", "rougeL", "rougeLsum"}
	switch task {
	case data.SQuAD:
		return squad
	case data.XSum:
		return rouge
	}
	return append(squad, rouge...)
}

// exampleInput is ex's input as a Prediction shows it.
func exampleInput(ex data.Example) Input {
	return Input{Sentence: ex.Sentence, Text: ex.Text, Question: ex.Question, Context: ex.Context, Document: ex.Document, Prompt: ex.Prompt}
}

// references are what a generated answer for ex, an example of task, is
// scored against.
func references(task data.Task, ex data.Example) []string {
	switch task {
	case data.SQuAD:
		return ex.Answers
	case data.XSum:
		return []string{ex.Summary}
	}
	return append([]string{ex.Completion}, ex.References...)
}

// generatedPrediction is the record of the answer pred generated for ex,
// an example of task, and its scores (exampleScores', in generatedKeys'
// order).
func generatedPrediction(task data.Task, ex data.Example, pred string, scores []float64) Prediction {
	keyed := map[string]float64{}
	for i, k := range generatedKeys(task) {
		keyed[k] = scores[i]
	}
	return Prediction{ID: ex.ID, Input: exampleInput(ex), Generated: &Generated{Text: pred, References: references(task, ex), Scores: keyed}}
}

// labelledPrediction is the record of a label task's example whose
// predicted label index is pred; labels are the text tasks' answers by
// index (nil for Pets).
func labelledPrediction(id string, in Input, pred, gold int, labels []string) Prediction {
	l := &Labelled{Predicted: pred, Gold: gold, Correct: pred == gold}
	if labels != nil {
		l.PredictedLabel, l.GoldLabel = labels[pred], labels[gold]
	}
	return Prediction{ID: id, Input: in, Labelled: l}
}
