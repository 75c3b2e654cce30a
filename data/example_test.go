package data_test

import (
	"fmt"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/tokenizer"
)

// A task's file read into examples (its malformed rows reported and left
// out), each rendered with the model's chat template as the paper's
// conversation, and the encoded examples padded into one training batch.
// Only the assistant's answer and the end of its turn are supervised: the
// other labels are data.IgnoreIndex. testdata/sst2.tsv is GLUE's SST-2 TSV
// header, the first two rows of its dev set and a broken row; the tokenizer is the tokenizer
// package's test-sized cut of Qwen3's.
func ExampleTrainBatch() {
	exs, stats, err := data.ReadAll("testdata/sst2.tsv", data.SST2, data.ReadOptions{
		OnSkip: func(e *data.RowError) { fmt.Println("skipped:", e) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(stats.Examples, "examples,", stats.Skipped, "skipped")
	tok, err := tokenizer.Load("../tokenizer/testdata/qwen3-tiny")
	if err != nil {
		fmt.Println(err)
		return
	}
	enc := data.Encoder{Tok: tok}
	var encoded []data.Sequence
	for _, ex := range exs {
		e, err := enc.Encode(ex)
		if err != nil {
			fmt.Println(err)
			return
		}
		s, err := e.Sequence()
		if err != nil {
			fmt.Println(err)
			return
		}
		encoded = append(encoded, s)
	}
	b := data.TrainBatch(encoded, tok.PadID())
	fmt.Printf("batch %d×%d\n", b.Size, b.Len)
	for row := range b.Size {
		var real int
		var trained []int
		for t := range b.Len {
			real += b.Mask[row*b.Len+t]
			if l := b.Labels[row*b.Len+t]; l != data.IgnoreIndex {
				trained = append(trained, l)
			}
		}
		fmt.Printf("row %d: %d tokens, %d padding, trained on %q\n", row, real, b.Len-real, tok.Decode(trained, false))
	}
	// Output:
	// skipped: testdata/sst2.tsv: line 4: field "sentence": want 2 tab-separated columns, got 1
	// 2 examples, 1 skipped
	// batch 2×142
	// row 0: 142 tokens, 0 padding, trained on "Sentiment: great<|im_end|>"
	// row 1: 137 tokens, 5 padding, trained on "Sentiment: terrible<|im_end|>"
}
