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
		var in struct {
			Messages            []tokenizer.Message `json:"messages"`
			AddGenerationPrompt bool                `json:"add_generation_prompt"`
			EnableThinking      *bool               `json:"enable_thinking"`
			DateString          string              `json:"date_string"`
		}
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, err
		}
		if len(in.Messages) == 0 {
			return nil, errors.New(`field "messages": missing or empty`)
		}
		for i, m := range in.Messages {
			if m.Role == "" {
				return nil, fmt.Errorf(`field "messages[%d].role": missing`, i)
			}
		}
		text, ids, err := tk.EncodeChat(in.Messages, tokenizer.ChatOptions{
			AddGenerationPrompt: in.AddGenerationPrompt,
			EnableThinking:      in.EnableThinking,
			DateString:          in.DateString,
		})
		if err != nil {
			return nil, err
		}
		return struct {
			Rendered string `json:"rendered"`
			IDs      []int  `json:"ids"`
		}{text, ids}, nil
	})
}
