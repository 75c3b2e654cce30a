package data

import (
	"fmt"

	"github.com/meazo-go/meazo/tokenizer"
)

// The paper's system prompts (Boxes 1–3), verbatim.
const (
	SST2System  = "You are a sentiment analysis assistant. You will be given a user provided phrase or sentence, and your job will be to output terrible if it has negative sentiment or great if it has positive sentiment."
	SQuADSystem = "You are a question answering assistant. You will be given a user-provided context (paragraph or sentence), followed by a question. Your job will be to answer the question based on the paragraph or sentence."
	XSumSystem  = "You are a writing assistant that helps with summarizing text. You write concise, one-sentence summaries based on a user-provided text or article."
)

// Prompt is the conversation up to the assistant turn: system and user. A
// task on the user's own data has the config's instruction as its system
// turn, where the paper's tasks have theirs, or none without one; its user
// turn is the row's text or prompt as it stands.
func Prompt(ex Example) []tokenizer.Message {
	var system, user string
	switch ex.Task {
	case Classification, Generation:
		return ownPrompt(ex)
	case SST2:
		system, user = SST2System, "Sentence: "+ex.Sentence
	case SQuAD:
		system = SQuADSystem
		user = "Title: " + ex.Title + "\n\nContext: " + ex.Context + "\n\nQuestion: " + ex.Question
	case XSum:
		system, user = XSumSystem, "Article: "+ex.Document
	}
	return []tokenizer.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
}

// Target is the assistant's answer the model is trained to give:
// "Sentiment: great|terrible", "Answer: {first answer}", "Summary: {summary}";
// on the user's own data the label string or the completion, as it stands.
func Target(ex Example) (string, error) {
	switch ex.Task {
	case SST2:
		if ex.Label != 0 && ex.Label != 1 {
			return "", fmt.Errorf("example %s: SST-2 label %d is not 0 or 1", ex.ID, ex.Label)
		}
		return SST2Target(ex.Label), nil
	case SQuAD:
		if len(ex.Answers) == 0 {
			return "", fmt.Errorf("example %s: SQuAD question has no answer", ex.ID)
		}
		return "Answer: " + ex.Answers[0], nil
	case XSum:
		return "Summary: " + ex.Summary, nil
	case Classification:
		if ex.Own == nil || ex.Label < 0 || ex.Label >= len(ex.Own.Labels) {
			return "", fmt.Errorf("example %s: label %d is not one of the task's labels", ex.ID, ex.Label)
		}
		return ex.Own.Labels[ex.Label], nil
	case Generation:
		return ex.Completion, nil
	}
	return "", fmt.Errorf("example %s: unknown task %q", ex.ID, ex.Task)
}

// ownPrompt is Prompt of a task on the user's own data.
func ownPrompt(ex Example) []tokenizer.Message {
	user := ex.Text
	if ex.Task == Generation {
		user = ex.Prompt
	}
	var msgs []tokenizer.Message
	if ex.Own != nil && ex.Own.Instruction != "" {
		msgs = append(msgs, tokenizer.Message{Role: "system", Content: ex.Own.Instruction})
	}
	return append(msgs, tokenizer.Message{Role: "user", Content: user})
}

// SST2Target is the assistant content for an SST-2 label.
func SST2Target(label int) string { return "Sentiment: " + SST2LabelWords[label] }

// Conversation is the full training conversation: system, user, assistant.
func Conversation(ex Example) ([]tokenizer.Message, error) {
	target, err := Target(ex)
	if err != nil {
		return nil, err
	}
	return append(Prompt(ex), tokenizer.Message{Role: "assistant", Content: target}), nil
}
