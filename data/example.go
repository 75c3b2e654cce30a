package data

import "fmt"

// Task is one of the paper's three tasks.
type Task string

// The tasks, by the names configs use (task.name).
const (
	SST2  Task = "sst2"  // sentiment classification, scored by accuracy
	SQuAD Task = "squad" // extractive question answering, scored by EM and F1
	XSum  Task = "xsum"  // summarization, scored by ROUGE
)

// ParseTask accepts sst2, squad or xsum.
func ParseTask(s string) (Task, error) {
	switch t := Task(s); t {
	case SST2, SQuAD, XSum:
		return t, nil
	}
	return "", fmt.Errorf("unknown task %q (want sst2, squad or xsum)", s)
}

// Example is one row of any task; only the fields of its Task are set.
type Example struct {
	Task Task
	// ID is the dataset's id (SQuAD question id, XSum id, SST-2 idx), or the
	// row's position in its file when the format has none (GLUE TSV).
	ID string

	// SST-2.
	Sentence string
	Label    int // 0 negative, 1 positive

	// SQuAD v1.1.
	Title, Context, Question string
	Answers                  []string // every annotator's answer text, in order; the first is trained

	// XSum.
	Document, Summary string
}

// PromptBytes is the length in bytes of the example's own text in its
// prompt (the sentence, context and question, or the document): a chat
// rendering of the prompt holds at least that much, which a length limit
// can be checked against before the example is rendered and tokenized.
func (ex Example) PromptBytes() int {
	return len(ex.Sentence) + len(ex.Context) + len(ex.Question) + len(ex.Document)
}

// SST-2 label words the assistant answers with (docs/ALGORITHMS.md's data protocol Box 1), by label.
var SST2LabelWords = [2]string{"terrible", "great"}
