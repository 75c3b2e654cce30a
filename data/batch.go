package data

// Batch is a padded batch, row-major: token (b, t) is at b*Len + t.
type Batch struct {
	Size, Len int
	IDs       []int
	Labels    []int // IgnoreIndex on padding and unsupervised tokens; nil for generation
	Mask      []int // attention mask: 1 for real tokens, 0 for padding
}

// TrainBatch right-pads examples to the longest one. Padding gets padID,
// label IgnoreIndex and mask 0; the loss must rely on labels and the mask,
// never on the pad id (Llama-3 has no pad token and pad = eos would otherwise
// hide the end-of-turn target).
func TrainBatch(exs []Sequence, padID int) Batch {
	b := Batch{Size: len(exs)}
	for _, e := range exs {
		b.Len = max(b.Len, len(e.IDs))
	}
	b.IDs = make([]int, b.Size*b.Len)
	b.Labels = make([]int, b.Size*b.Len)
	b.Mask = make([]int, b.Size*b.Len)
	for i, e := range exs {
		row := i * b.Len
		for t := range b.Len {
			b.IDs[row+t], b.Labels[row+t] = padID, IgnoreIndex
			if t < len(e.IDs) {
				b.IDs[row+t], b.Mask[row+t] = int(e.IDs[t]), 1
				if t >= int(e.Start) && t < int(e.End) {
					b.Labels[row+t] = int(e.IDs[t])
				}
			}
		}
	}
	return b
}

// GenerateBatch left-pads prompts so that every row's next token is at the
// same position, as batched generation with a KV cache needs.
func GenerateBatch(prompts [][]int, padID int) Batch {
	b := Batch{Size: len(prompts)}
	for _, p := range prompts {
		b.Len = max(b.Len, len(p))
	}
	b.IDs = make([]int, b.Size*b.Len)
	b.Mask = make([]int, b.Size*b.Len)
	for i, p := range prompts {
		row := i * b.Len
		pad := b.Len - len(p)
		for t := range pad {
			b.IDs[row+t] = padID
		}
		for t, id := range p {
			b.IDs[row+pad+t], b.Mask[row+pad+t] = id, 1
		}
	}
	return b
}
