package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/tokenizer"
)

func init() {
	register("chat", cli.Help{
		Summary:  "render JSON Lines conversations with a model's chat template",
		Synopsis: "--model DIR < conversations.jsonl",
		Does: `Renders conversations with a model's own chat template, as transformers' apply_chat_template does, and
encodes them: to check what a chat model reads, or compare with transformers.`,
		Reads: `--model DIR: tokenizer.json, tokenizer_config.json (and chat_template.jinja where the model has one);
conversations.jsonl on stdin, one object a line: {"messages": [{"role","content"}...],
"add_generation_prompt": bool, "enable_thinking": bool, "date_string": "26 Jul 2024"} (all but
messages optional).`,
		Prints:  `one JSON line per input line: {"rendered": "...", "ids": [...]} (the ids without added special tokens).`,
		Example: "meazo-inspect chat --model models/Qwen3-0.6B < conversations.jsonl",
	}, runChat)
}

// runChat reads {"messages": [...], "add_generation_prompt": bool,
// "enable_thinking": bool, "date_string": "..."} lines (the last three
// optional) and writes {"rendered": "...", "ids": [...]}, the ids encoded
// without added special tokens, as apply_chat_template does.
func runChat(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := commands.Flags("chat")
	dir := fs.String("model", "", "model directory with tokenizer.json, tokenizer_config.json [and chat_template.jinja]")
	tk, err := loadModelFlag(fs, args, dir)
	if err != nil {
		return err
	}
	return eachJSONLine(stdin, stdout, func(line []byte) (any, error) {
		c, err := parseChatLine(line)
		if err != nil {
			return nil, err
		}
		opts := c.options()
		opts.AddGenerationPrompt = c.AddGenerationPrompt != nil && *c.AddGenerationPrompt
		text, ids, err := tk.EncodeChat(c.Messages, opts)
		if err != nil {
			return nil, err
		}
		return struct {
			Rendered string `json:"rendered"`
			IDs      []int  `json:"ids"`
		}{text, ids}, nil
	})
}

// chatLine is one conversation of chat's and generate's JSON Lines input:
// {"messages": [...], "add_generation_prompt": bool, "enable_thinking":
// bool, "date_string": "..."}, all but messages optional.
type chatLine struct {
	Messages            []tokenizer.Message `json:"messages"`
	AddGenerationPrompt *bool               `json:"add_generation_prompt"`
	EnableThinking      *bool               `json:"enable_thinking"`
	DateString          string              `json:"date_string"`
}

// parseChatLine reads a chatLine and checks that it has messages, each
// with a role.
func parseChatLine(line []byte) (chatLine, error) {
	var c chatLine
	if err := json.Unmarshal(line, &c); err != nil {
		return c, err
	}
	if len(c.Messages) == 0 {
		return c, errors.New(`field "messages": missing or empty`)
	}
	for i, m := range c.Messages {
		if m.Role == "" {
			return c, fmt.Errorf(`field "messages[%d].role": missing`, i)
		}
	}
	return c, nil
}

// options are the line's template options, without the generation prompt
// (each command decides it).
func (c chatLine) options() tokenizer.ChatOptions {
	return tokenizer.ChatOptions{EnableThinking: c.EnableThinking, DateString: c.DateString}
}
