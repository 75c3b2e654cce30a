package safetensors_test

import (
	"fmt"

	"github.com/meazo-go/meazo/safetensors"
)

// A file's header (names, dtypes, shapes, metadata) is read at Open; a
// tensor's values only when asked for, as float32 whatever the file stores
// (here bfloat16, widened exactly) or as int64. testdata/tiny.safetensors
// was written by Python's safetensors.torch.save_file (testdata/README.md).
func ExampleOpen() {
	f, err := safetensors.Open("testdata/tiny.safetensors")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	fmt.Println("metadata", f.Metadata())
	for _, t := range f.Tensors() {
		fmt.Println(t.Name, t.Dtype, t.Shape)
	}
	embed, err := f.Float32("embed.weight")
	if err != nil {
		fmt.Println(err)
		return
	}
	step, err := f.Int64("step")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(embed, step)
	if _, err := f.Float32("lm_head.weight"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// metadata map[format:pt]
	// step I64 [1]
	// norm.weight F32 [3]
	// embed.weight BF16 [2 3]
	// [0.5 -1 2 0.25 0 -3.5] [7]
	// safetensors testdata/tiny.safetensors: no tensor "lm_head.weight"
}
