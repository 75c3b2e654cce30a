package data

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/internal/suggest"
)

// Task is one of the paper's three text tasks, or a task on the user's own
// data (classification, generation).
type Task string

// The tasks, by the names configs use (task.name).
const (
	SST2  Task = "sst2"  // sentiment classification, scored by accuracy
	SQuAD Task = "squad" // extractive question answering, scored by EM and F1
	XSum  Task = "xsum"  // summarization, scored by ROUGE

	// Classification is the user's own labelled texts (JSON Lines rows
	// {"text", "label"}), the labels named by the config (OwnTask), scored
	// as SST-2 is: the label whose answer the model finds likeliest.
	Classification Task = "classification"
	// Generation is the user's own prompts and completions (JSON Lines rows
	// {"prompt", "completion"}), scored as SQuAD and XSum are: greedy
	// generation, EM, F1 and ROUGE against the completion and its references.
	Generation Task = "generation"
)

// ParseTask accepts sst2, squad, xsum, classification or generation.
func ParseTask(s string) (Task, error) {
	switch t := Task(s); t {
	case SST2, SQuAD, XSum, Classification, Generation:
		return t, nil
	}
	if Task(s) == Pets {
		return "", fmt.Errorf("task %q is the image task: want a text task, sst2, squad, xsum, classification or generation", s)
	}
	hint := ""
	tasks := []string{string(SST2), string(SQuAD), string(XSum), string(Classification), string(Generation)}
	if c := suggest.Closest(strings.ToLower(s), tasks); c != "" && suggest.Distance(strings.ToLower(s), c) <= 2 {
		hint = fmt.Sprintf("; did you mean %q?", c) // as meazo-train's task.name
	}
	return "", fmt.Errorf("unknown task %q (want sst2, squad, xsum, classification or generation%s)", s, hint)
}

// OwnData says whether t is a task on the user's own data (classification,
// generation), whose prompt and labels the config gives (OwnTask).
func (t Task) OwnData() bool { return t == Classification || t == Generation }

// Generates reports whether the task is evaluated by generating an answer
// (SQuAD, XSum, generation); SST-2 and classification score their label
// words' log-probabilities instead.
func (t Task) Generates() bool { return t != SST2 && t != Classification && t != Pets }

// Example is one row of any task; only the fields of its Task are set.
type Example struct {
	Task Task
	// ID is the dataset's id (SQuAD question id, XSum id, SST-2 idx), or the
	// row's position in its file when the format has none (GLUE TSV).
	ID string

	// SST-2.
	Sentence string
	Label    int // SST-2: 0 negative, 1 positive; classification: the index in Own.Labels

	// SQuAD v1.1.
	Title, Context, Question string
	Answers                  []string // every annotator's answer text, in order; the first is trained

	// XSum.
	Document, Summary string

	// Classification: the text (Label is its label's index).
	Text string
	// Generation: the user turn, the answer trained, and more answers that
	// score as right (References; the completion is always one).
	Prompt, Completion string
	References         []string
	// Own is what the config says of a classification or generation task:
	// its instruction and label strings (nil for the paper's tasks).
	Own *OwnTask
}

// PromptBytes is the length in bytes of the example's own text in its
// prompt (the sentence, context and question, the document, the text or
// the prompt): a chat rendering of the prompt holds at least that much,
// which a length limit can be checked against before the example is
// rendered and tokenized.
func (ex Example) PromptBytes() int {
	return len(ex.Sentence) + len(ex.Context) + len(ex.Question) + len(ex.Document) + len(ex.Text) + len(ex.Prompt)
}

// SST-2 label words the assistant answers with (docs/ALGORITHMS.md's data protocol Box 1), by label.
var SST2LabelWords = [2]string{"terrible", "great"}
