package tokenizer

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
