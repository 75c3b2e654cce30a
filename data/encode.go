package data

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/tokenizer"
)

// IgnoreIndex marks a label the loss skips (HF's -100).
const IgnoreIndex = -100

// ChatTokenizer is what this package needs from a tokenizer: the model's
// chat template rendered, and rendered and encoded, as apply_chat_template
// does (no special tokens added again: EncodeChat is RenderChat and then
// Encode(text, false)), the ids that end a turn, and plain text encoded as
// tokenizer.encode does.
type ChatTokenizer interface {
	RenderChat(msgs []tokenizer.Message, opt tokenizer.ChatOptions) (string, error)
	EncodeChat(msgs []tokenizer.Message, opt tokenizer.ChatOptions) (string, []int, error)
	StopIDs() []int
	Encode(text string, addSpecial bool) []int
}

// Encoded is one rendered, tokenized training example.
type Encoded struct {
	Text string // the full render
	IDs  []int
	// Labels is aligned with IDs (the model shifts, as HF does): IDs[i] where
	// the token is supervised, IgnoreIndex elsewhere. Exactly the assistant
	// content and the end-of-turn token that closes it are supervised.
	Labels []int
	// PromptLen is the length of the generation prompt (system, user,
	// assistant header, Qwen3's empty think block), a token prefix of IDs.
	PromptLen int
}

// Supervised returns the index range [start, end) of the supervised tokens.
func (e Encoded) Supervised() (start, end int) {
	start, end = len(e.Labels), len(e.Labels)
	for i, l := range e.Labels {
		if l != IgnoreIndex {
			if start == len(e.Labels) {
				start = i
			}
			end = i + 1
		}
	}
	return start, end
}

// Sequence is an encoded example as a run holds it for all of its steps:
// its token ids in 32 bits and the run of them trained on, without its
// text. A run keeps tens of thousands of them (SQuAD and XSum up to
// 50,000, SST-2's 67,349), which as Encoded (the text, and ids and labels
// in 64 bits) took 1.9 KB an SST-2 example, 5.6 KB a SQuAD one and 12 KB
// an XSum one with Qwen3's tokenizer: 0.6 GB for XSum's 50,000, a quarter
// of Qwen3-0.6B's weights.
type Sequence struct {
	IDs        []int32
	Start, End int32 // IDs[Start:End] are supervised (their labels are themselves), the rest not
}

// NewSequence is ids with ids[start:end] supervised, the ids in 32 bits
// (an error for one outside them).
func NewSequence(ids []int, start, end int) (Sequence, error) {
	s := Sequence{IDs: make([]int32, len(ids)), Start: int32(start), End: int32(end)}
	for i, id := range ids {
		if id < 0 || id > math.MaxInt32 {
			return Sequence{}, fmt.Errorf("encoded example: token id %d at %d is outside 32 bits", id, i)
		}
		s.IDs[i] = int32(id)
	}
	return s, nil
}

// Sequence returns e as a Sequence, or an error if e's labels are not one
// run of its ids with IgnoreIndex around it (as every Encoder method makes
// them).
func (e Encoded) Sequence() (Sequence, error) {
	if len(e.Labels) != len(e.IDs) {
		return Sequence{}, fmt.Errorf("encoded example: %d labels for %d tokens", len(e.Labels), len(e.IDs))
	}
	start, end := e.Supervised()
	for i, id := range e.IDs {
		want := IgnoreIndex
		if i >= start && i < end {
			want = id
		}
		if e.Labels[i] != want {
			return Sequence{}, fmt.Errorf("encoded example: label %d at %d, want %d: the supervised tokens [%d, %d) are not one run of the ids", e.Labels[i], i, want, start, end)
		}
	}
	return NewSequence(e.IDs, start, end)
}

// Encoder renders examples with a model's chat template, or MeZO's prompt
// templates (Format).
type Encoder struct {
	Tok ChatTokenizer
	// DateString pins Llama-3.x's date ("" means the template default, 26 Jul 2024).
	DateString string
	// Format is how examples become text ("": FormatChat).
	Format Format
}

// options are the template options docs/ALGORITHMS.md's data protocol fixes: Qwen3 without thinking, so
// the generation prompt ends with the empty think block and is an exact
// prefix of the training text; a pinned date for Llama.
func (e *Encoder) options(generationPrompt bool) tokenizer.ChatOptions {
	thinking := false
	return tokenizer.ChatOptions{AddGenerationPrompt: generationPrompt, EnableThinking: &thinking, DateString: e.DateString}
}

// EncodePrompt renders and tokenizes the generation prompt of ex.
func (e *Encoder) EncodePrompt(ex Example) (string, []int, error) {
	if e.Format == FormatMeZO {
		prompt, _, err := mezoTemplate(ex)
		if err != nil {
			return "", nil, err
		}
		return prompt, e.Tok.Encode(prompt, true), nil
	}
	text, ids, err := e.Tok.EncodeChat(Prompt(ex), e.options(true))
	if err != nil {
		return "", nil, fmt.Errorf("example %s: render prompt: %w", ex.ID, err)
	}
	return text, ids, nil
}

// Encode renders ex as a training example.
func (e *Encoder) Encode(ex Example) (Encoded, error) {
	if e.Format == FormatMeZO {
		if ex.Label != 0 && ex.Label != 1 {
			return Encoded{}, fmt.Errorf("example %s: SST-2 label %d is not 0 or 1", ex.ID, ex.Label)
		}
		return e.encodeMeZO(ex, ex.Label)
	}
	target, err := Target(ex)
	if err != nil {
		return Encoded{}, err
	}
	enc, err := e.EncodeWithTarget(Prompt(ex), target)
	if err != nil {
		return Encoded{}, fmt.Errorf("example %s: %w", ex.ID, err)
	}
	return enc, nil
}

// EncodeWithTarget renders prompt + an assistant turn with content target
// and marks the supervised tokens: from the end of the generation prompt
// through the last end-of-turn id of the render (Qwen3's template writes a
// "\n" after <|im_end|>, which is not supervised).
func (e *Encoder) EncodeWithTarget(prompt []tokenizer.Message, target string) (Encoded, error) {
	promptText, promptIDs, err := e.Tok.EncodeChat(prompt, e.options(true))
	if err != nil {
		return Encoded{}, fmt.Errorf("render prompt: %w", err)
	}
	text, ids, err := e.answered(prompt, promptText, target)
	if err != nil {
		return Encoded{}, err
	}
	if len(ids) < len(promptIDs) || !slices.Equal(ids[:len(promptIDs)], promptIDs) {
		return Encoded{}, fmt.Errorf("the generation prompt's tokens are not a prefix of the conversation's tokens")
	}
	stops := e.Tok.StopIDs()
	end := -1
	for i := len(ids) - 1; i >= len(promptIDs); i-- {
		if slices.Contains(stops, ids[i]) {
			end = i
			break
		}
	}
	if end < 0 {
		return Encoded{}, fmt.Errorf("no end-of-turn token (%v) after the assistant content", stops)
	}
	labels := make([]int, len(ids))
	for i := range labels {
		labels[i] = IgnoreIndex
		if i >= len(promptIDs) && i <= end {
			labels[i] = ids[i]
		}
	}
	return Encoded{Text: text, IDs: ids, Labels: labels, PromptLen: len(promptIDs)}, nil
}

// InstructionDropped reports whether the chat template leaves instruction
// (task.instruction, the system turn of a task on the user's own data) out
// of the prompt it renders, so that the model never reads it: a template
// without a system turn does (the built-in demo's, on purpose). MeZO's
// format has no instruction to drop.
func (e *Encoder) InstructionDropped(instruction string) (bool, error) {
	instruction = strings.TrimSpace(instruction)
	if e.Format == FormatMeZO || instruction == "" {
		return false, nil
	}
	msgs := []tokenizer.Message{{Role: "system", Content: instruction}, {Role: "user", Content: "?"}}
	text, err := e.Tok.RenderChat(msgs, e.options(true))
	if err != nil {
		return false, fmt.Errorf("render a prompt with a system turn: %w", err)
	}
	return !strings.Contains(text, instruction), nil
}

// answered renders prompt answered by an assistant turn with content target,
// so that the render starts with promptText (prompt's generation prompt).
// Most templates render it so as they are. Some write the system message
// only into a user turn that ends the conversation (Mistral-7B-Instruct-
// v0.3's: "loop.last"), so the answered conversation renders without it
// while the prompt the model is asked at evaluation has it; then the
// render is promptText followed by the assistant turn as the template
// writes it after the same conversation without its system messages: the
// model is trained on what it is asked.
func (e *Encoder) answered(prompt []tokenizer.Message, promptText, target string) (string, []int, error) {
	answer := tokenizer.Message{Role: "assistant", Content: target}
	text, err := e.Tok.RenderChat(append(slices.Clip(prompt), answer), e.options(false))
	if err != nil {
		return "", nil, fmt.Errorf("render conversation: %w", err)
	}
	if !strings.HasPrefix(text, promptText) {
		if text, err = e.answeredWithoutSystem(prompt, promptText, answer); err != nil {
			return "", nil, thinkHint(err, target)
		}
	}
	return text, e.Tok.Encode(text, false), nil
}

// thinkHint adds to err, a render that does not start with the generation
// prompt, the likely cause when the answer holds "</think>": Qwen3's
// template takes what comes before it for the model's reasoning and renders
// that into a think block of its own, where the generation prompt (thinking
// off) ends with an empty one. Without the hint the message names the
// template, not the text that the user can change.
func thinkHint(err error, target string) error {
	if !strings.Contains(target, "</think>") {
		return err
	}
	return fmt.Errorf("%w: the answer holds \"</think>\", and a template such as Qwen3's renders the text before it as the model's reasoning, in place of the empty think block the generation prompt ends with; train on answers without their reasoning (%w)", err, ErrAnswer)
}

// ErrAnswer marks an error of one example's answer text, not of the
// template or the tokenizer: the chat template cannot render it after the
// prompt the model is asked (an answer holding Qwen3's "</think>"). A run
// leaves such an example out, as it leaves out a malformed row, unless
// task.strict.
var ErrAnswer = errors.New("an answer the chat template cannot render after the model's prompt")

// answeredWithoutSystem is promptText followed by the assistant turn as
// the template writes it after prompt without its system messages.
func (e *Encoder) answeredWithoutSystem(prompt []tokenizer.Message, promptText string, answer tokenizer.Message) (string, error) {
	bare := slices.DeleteFunc(slices.Clone(prompt), func(m tokenizer.Message) bool { return m.Role == "system" })
	if len(bare) == len(prompt) {
		return "", fmt.Errorf("the chat template's generation prompt is not a prefix of the rendered conversation")
	}
	bareText, err := e.Tok.RenderChat(bare, e.options(true))
	if err != nil {
		return "", fmt.Errorf("render prompt without its system turn: %w", err)
	}
	full, err := e.Tok.RenderChat(append(bare, answer), e.options(false))
	if err != nil {
		return "", fmt.Errorf("render conversation without its system turn: %w", err)
	}
	if !strings.HasPrefix(full, bareText) {
		return "", fmt.Errorf("the chat template's generation prompt is not a prefix of the rendered conversation, with or without the system turn")
	}
	return promptText + full[len(bareText):], nil
}

// Candidates are the renders of every label of one example (SST-2's two, a
// classification's task.labels), for scoring.
type Candidates struct {
	// Labels are the labels' answers, by index, for messages: SST-2's label
	// words, a classification's labels.
	Labels []string
	// Full[c] is the conversation answered with label c (SST-2: the
	// assistant content SST2Target(c)).
	Full []Encoded
	// Span[c] is the [start, end) of Full[c].IDs where the candidates
	// differ: the label tokens only, not a prefix they share (SST-2's
	// "Sentiment:") and not the end-of-turn. A token at position p is scored
	// with the model's log-probability from position p-1.
	Span [][2]int
}

// Candidates renders every label of ex for scoring (docs/ALGORITHMS.md's
// data protocol: the class with the highest mean log-probability over its
// label tokens is predicted).
func (e *Encoder) Candidates(ex Example) (Candidates, error) {
	var cs Candidates
	switch {
	case ex.Task == SST2:
		cs.Labels = SST2LabelWords[:]
	case ex.Task == Classification && ex.Own != nil:
		cs.Labels = ex.Own.Labels
	default:
		return cs, fmt.Errorf("example %s: task %s is not scored by its labels", ex.ID, ex.Task)
	}
	for c := range cs.Labels {
		var enc Encoded
		var err error
		if e.Format == FormatMeZO {
			enc, err = e.encodeMeZO(ex, c)
		} else {
			answered := ex
			answered.Label = c
			var target string
			if target, err = Target(answered); err == nil {
				enc, err = e.EncodeWithTarget(Prompt(ex), target)
			}
		}
		if err != nil {
			return cs, fmt.Errorf("example %s: %w", ex.ID, err)
		}
		cs.Full = append(cs.Full, enc)
	}
	if err := cs.spans(); err != nil {
		return cs, fmt.Errorf("example %s: %w", ex.ID, err)
	}
	return cs, nil
}

// spans sets Span: the prefix every candidate shares and the suffix every
// one shares are not scored, the suffix cut short where it would leave a
// candidate no token (a label whose tokens begin another's: "yes" and "yes
// sir", where the first's end-of-turn is what tells them apart).
func (cs *Candidates) spans() error {
	ids := make([][]int, len(cs.Full))
	for c, f := range cs.Full {
		ids[c] = f.IDs
	}
	for c := range ids {
		for d := range c {
			if slices.Equal(ids[c], ids[d]) {
				return fmt.Errorf("the labels %s and %s render as the same tokens: their scores could not tell them apart", strconv.Quote(cs.Labels[d]), strconv.Quote(cs.Labels[c]))
			}
		}
	}
	pre := 0
	for all(ids, func(a []int) bool { return pre < len(a) && a[pre] == ids[0][pre] }) {
		pre++
	}
	suf := 0
	for all(ids, func(a []int) bool {
		return suf+1 < len(a)-pre && a[len(a)-1-suf] == ids[0][len(ids[0])-1-suf]
	}) {
		suf++
	}
	if pre == 0 {
		return fmt.Errorf("the label renders share no prompt")
	}
	cs.Span = make([][2]int, len(ids))
	for c, a := range ids {
		if cs.Span[c] = [2]int{pre, len(a) - suf}; pre == len(a) {
			return fmt.Errorf("the label %s renders as the beginning of another's: it has no token of its own to score", strconv.Quote(cs.Labels[c]))
		}
	}
	return nil
}

// all says whether every list of ids satisfies ok.
func all(ids [][]int, ok func([]int) bool) bool {
	for _, a := range ids {
		if !ok(a) {
			return false
		}
	}
	return true
}

// DefaultMaxTokens is the paper's context limit, the default of
// task.max_length: longer training and validation examples are dropped (the
// paper's filter for XSum).
const DefaultMaxTokens = 2048
