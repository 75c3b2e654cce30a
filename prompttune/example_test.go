package prompttune_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
)

// letters is a stand-in tokenizer for the example: a BOS id (1), then one
// id per letter a–z. A real run passes a *tokenizer.Tokenizer.
type letters struct{}

func (letters) Encode(text string, addSpecial bool) []int {
	var ids []int
	if addSpecial {
		ids = append(ids, 1)
	}
	for _, c := range text {
		ids = append(ids, 3+int(c-'a'))
	}
	return ids
}

// Five virtual tokens initialised from the text "hi", as PEFT's TEXT init
// does: the text's ids (BOS, h, i) repeated until there are five, each
// token starting as its id's embedding row. Attach puts them before every
// sequence the model runs; Save writes PEFT's files, which Load (or PEFT's
// PeftModel.from_pretrained) reads back. The model is random weights of a
// tiny Llama; a real one is model.Load of its directory.
func ExampleFromText() {
	m, err := model.NewRandom(&model.Config{
		Architecture: "LlamaForCausalLM", VocabSize: 32, HiddenSize: 16, IntermediateSize: 32, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4, BOSTokenID: 1,
	}, 1, 0.02)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Free()
	p, err := prompttune.FromText(m, letters{}, 5, "hi")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d virtual tokens × %d = %d parameters\n", p.N, p.Hidden, p.Count())
	row := make([]float32, m.HiddenSize)
	m.EmbeddingRow(row, 3+int('h'-'a'))
	fmt.Println("token 1 starts as h's embedding:", slices.Equal(p.Params()[0][1*p.Hidden:2*p.Hidden], row))
	m.EmbeddingRow(row, 1)
	fmt.Println("token 3 starts as BOS's embedding:", slices.Equal(p.Params()[0][3*p.Hidden:4*p.Hidden], row))
	p.Attach(m)

	dir, err := os.MkdirTemp("", "prompttune-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "adapter")
	if err := p.Save(out, m); err != nil {
		fmt.Println(err)
		return
	}
	files, _ := os.ReadDir(out)
	for _, f := range files {
		fmt.Println(f.Name())
	}
	q, err := prompttune.Load(out, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loaded %q: the same values: %v\n", q.InitText, slices.Equal(p.Params()[0], q.Params()[0]))
	// Output:
	// 5 virtual tokens × 16 = 80 parameters
	// token 1 starts as h's embedding: true
	// token 3 starts as BOS's embedding: true
	// adapter_config.json
	// adapter_model.safetensors
	// loaded "hi": the same values: true
}
