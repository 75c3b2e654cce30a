package data

import (
	"fmt"
	"strings"
)

// Format is how examples become text: the paper's conversations in the
// model's chat template, or MeZO's prompt templates for a model without
// one (OPT).
type Format string

const (
	// FormatChat renders the paper's conversations (Boxes 1–3) with the
	// model's chat template and supervises the assistant's answer and the
	// end of its turn (the default).
	FormatChat Format = "chat"
	// FormatMeZO renders MeZO's templates (its large_models/templates.py,
	// which FZOO's code uses too), for models without a chat template.
	// SST-2: "{sentence} It was" with the verbalizer " terrible" or
	// " great"; the tokenizer adds its special tokens (OPT's BOS </s>),
	// and the verbalizer's tokens alone are supervised, as MeZO's
	// option_len marks them. SQuAD and XSum have no such template here.
	FormatMeZO Format = "mezo"
)

// ParseFormat accepts chat (or "", the default) and mezo.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case "", FormatChat:
		return FormatChat, nil
	case FormatMeZO:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q (want chat or mezo)", s)
}

// mezoSST2 is MeZO's SST2Template: encode() is the prompt, verbalize() the
// prompt and the label word. MeZO strips the sentence, and the prompt's and
// the verbalized text's outer spaces (encode_prompt's .strip(' ')).
func mezoSST2(ex Example) (prompt string, verbalized [2]string) {
	text := strings.TrimSpace(ex.Sentence)
	prompt = strings.Trim(text+" It was", " ")
	for c, word := range SST2LabelWords {
		verbalized[c] = strings.Trim(text+" It was "+word, " ")
	}
	return prompt, verbalized
}

// mezoTemplate returns ex's MeZO prompt and verbalized texts.
func mezoTemplate(ex Example) (string, [2]string, error) {
	if ex.Task != SST2 {
		return "", [2]string{}, fmt.Errorf("example %s: format mezo has only SST-2's template (task %s needs format chat)", ex.ID, ex.Task)
	}
	p, v := mezoSST2(ex)
	return p, v, nil
}

// encodeMeZO is Encode for FormatMeZO: the verbalized text of the label c,
// with the tokenizer's special tokens, the last tokens supervised that the
// verbalizer adds to the prompt's count (MeZO's option_len:
// len(encode(verbalized)) − len(encode(prompt))).
func (e *Encoder) encodeMeZO(ex Example, c int) (Encoded, error) {
	prompt, verbalized, err := mezoTemplate(ex)
	if err != nil {
		return Encoded{}, err
	}
	promptIDs := e.Tok.Encode(prompt, true)
	ids := e.Tok.Encode(verbalized[c], true)
	option := len(ids) - len(promptIDs)
	if option <= 0 {
		return Encoded{}, fmt.Errorf("example %s: the verbalizer adds no token to the prompt", ex.ID)
	}
	labels := make([]int, len(ids))
	for i := range labels {
		labels[i] = IgnoreIndex
		if i >= len(ids)-option {
			labels[i] = ids[i]
		}
	}
	return Encoded{Text: verbalized[c], IDs: ids, Labels: labels, PromptLen: len(ids) - option}, nil
}
