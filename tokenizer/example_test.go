package tokenizer_test

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/tokenizer"
)

// A chat rendered with the model's own chat template and encoded, as
// transformers' apply_chat_template(msgs, tokenize=True) does. The
// directory is Qwen3's tokenizer cut down to its first 512 merges
// (testdata/make_qwen3_tiny.py), so words break into more, shorter tokens
// than in the real one; a model directory is loaded the same way.
func ExampleTokenizer_EncodeChat() {
	tok, err := tokenizer.Load("testdata/qwen3-tiny")
	if err != nil {
		fmt.Println(err)
		return
	}
	thinking := false
	text, ids, err := tok.EncodeChat([]tokenizer.Message{
		{Role: "user", Content: "Is this review positive? A gem."},
	}, tokenizer.ChatOptions{AddGenerationPrompt: true, EnableThinking: &thinking})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", text)
	fmt.Println(ids)
	var pieces []string
	for _, id := range ids {
		pieces = append(pieces, tok.Decode([]int{id}, false))
	}
	fmt.Printf("%q\n", strings.Join(pieces, "|"))
	fmt.Println("stop at", tok.StopIDs())
	// Output:
	// "<|im_start|>user\nIs this review positive? A gem.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	// [769 355 261 198 40 82 419 312 85 570 281 436 275 533 30 362 342 336 13 770 198 769 395 380 517 198 771 271 772 271]
	// "<|im_start|>|us|er|\n|I|s| this| re|v|iew| p|os|it|ive|?| A| g|em|.|<|im_end|>|\n|<|im_start|>|ass|ist|ant|\n|<think>|\n\n|</think>|\n\n"
	// stop at [768 770]
}
