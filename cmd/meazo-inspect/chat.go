package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/meazo-go/meazo/tokenizer"
)

func init() {
	register("chat", "render JSON Lines conversations with a model's chat template", runChat)
}

// runChat reads {"messages": [...], "add_generation_prompt": bool,
// "enable_thinking": bool, "date_string": "..."} lines (the last three
// optional) and writes {"rendered": "...", "ids": [...]}, the ids encoded
// without added special tokens, as apply_chat_template does.
func runChat(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	dir := fs.String("model", "", "model directory with tokenizer.json, tokenizer_config.json [and chat_template.jinja]")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: meazo-inspect chat --model DIR < conversations.jsonl\n"+
			`reads {"messages": [{"role","content"}...], "add_generation_prompt": bool, "enable_thinking": bool, "date_string": "26 Jul 2024"}`+"\n"+
			`per line (all but messages optional), writes {"rendered": "...", "ids": [...]} per line`)
		fs.PrintDefaults()
	}
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
