package tokenizer

import (
	"errors"
	"fmt"
)

// Message is one turn of a chat conversation, as HF's apply_chat_template takes it.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatOptions are the template variables a caller may set when rendering.
type ChatOptions struct {
	// AddGenerationPrompt appends the assistant header so the model continues as the assistant.
	AddGenerationPrompt bool
	// EnableThinking is Qwen3's enable_thinking; nil leaves the template's default.
	EnableThinking *bool
	// DateString pins Llama-3.x's date_string (and strftime_now); empty means "26 Jul 2024",
	// so renders never depend on today's date.
	DateString string
}

// DefaultDateString is the date Llama-3.x templates print when the caller
// pins none (the template's own fallback), so renders never depend on today.
const DefaultDateString = "26 Jul 2024"

// ErrNoChatTemplate is RenderChat's error for a model directory without a
// chat template. Some base models' repositories have none; their Instruct
// repository's chat_template.jinja renders the same conversations.
var ErrNoChatTemplate = errors.New("the model directory has no chat template (chat_template in tokenizer_config.json, or chat_template.jinja); " +
	"a base model's repository may lack one: copy chat_template.jinja from the matching Instruct repository")

// HasChatTemplate says whether the model directory had a chat template.
func (t *Tokenizer) HasChatTemplate() bool { return t.template != nil }

// RenderChat renders msgs with the model's own chat template, as HF's
// apply_chat_template(msgs, tokenize=False, ...) does.
func (t *Tokenizer) RenderChat(msgs []Message, opt ChatOptions) (string, error) {
	if t.template == nil {
		return "", fmt.Errorf("render chat: %w", ErrNoChatTemplate)
	}
	vars := map[string]any{"add_generation_prompt": opt.AddGenerationPrompt}
	for name, v := range map[string]string{"bos_token": t.bosToken, "eos_token": t.eosToken, "pad_token": t.padToken} {
		if v != "" {
			vars[name] = v
		}
	}
	if opt.EnableThinking != nil {
		vars["enable_thinking"] = *opt.EnableThinking
	}
	s, err := t.template.render(msgs, vars, opt.DateString)
	if err != nil {
		return "", fmt.Errorf("render chat: %w", err)
	}
	return s, nil
}

// EncodeChat renders msgs and encodes the text without adding special tokens
// (the template writes them itself), as apply_chat_template(tokenize=True) does.
func (t *Tokenizer) EncodeChat(msgs []Message, opt ChatOptions) (text string, ids []int, err error) {
	text, err = t.RenderChat(msgs, opt)
	if err != nil {
		return "", nil, err
	}
	return text, t.Encode(text, false), nil
}
