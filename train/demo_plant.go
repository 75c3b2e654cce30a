package train

import (
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/meazo-go/meazo/safetensors"
)

// plantSentiment gives the demo model's embeddings a sentiment direction, as
// a pretrained model's have: a random unit direction u is added, scaled by
// strength, to the embedding of every positive word and of " great", and
// subtracted from every negative word's and " terrible"'s (the label words
// are among the demo's adjectives). The rest of the model stays random.
func plantSentiment(modelDir string, vocab map[string]int, strength float64) error {
	path := filepath.Join(modelDir, "model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	for _, info := range f.Tensors() {
		v, err := f.Float32(info.Name)
		if err != nil {
			f.Close()
			return err
		}
		if info.Name == "model.embed_tokens.weight" {
			hidden := info.Shape[1]
			r := rand.New(rand.NewPCG(7, 2024))
			u := make([]float64, hidden)
			var n float64
			for i := range u {
				u[i] = r.NormFloat64()
				n += u[i] * u[i]
			}
			for i := range u {
				u[i] *= strength / math.Sqrt(n)
			}
			space := byteAlphabet()[' ']
			for _, g := range []struct {
				sign  float64
				words []string
			}{{1, demoPositive}, {-1, demoNegative}} {
				sign := g.sign
				for _, w := range g.words {
					id := vocab[space+w]
					for i := range u {
						v[id*hidden+i] += float32(sign * u[i])
					}
				}
			}
		}
		tensors = append(tensors, safetensors.F32Tensor(info.Name, info.Shape, v))
	}
	f.Close()
	return safetensors.WriteFile(path, tensors, map[string]string{"format": "pt"})
}
