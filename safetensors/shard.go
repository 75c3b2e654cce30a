package safetensors

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
)

// DefaultMaxShard is transformers' save_pretrained default shard size
// (max_shard_size "5GB").
const DefaultMaxShard = 5_000_000_000

// WriteSharded writes tensors into the directory dir as transformers'
// save_pretrained shards a state dict: in the order given, a new shard
// whenever the next tensor would take the current one past maxShard bytes
// (a tensor larger than that gets a shard of its own). One shard is
// model.safetensors; more are model-00001-of-0000N.safetensors, listed in
// model.safetensors.index.json (its metadata's total_size is the tensors'
// bytes), which is written last. Each file is written atomically, and the
// tensors' bytes may be produced while they are written (Tensor.Produce).
// dir must hold no checkpoint yet: the files of another one beside these
// would be read in their place (model.safetensors wins over an index) or
// mixed with them, and they are not this function's to remove.
func WriteSharded(dir string, tensors []Tensor, metadata map[string]string, maxShard int64) error {
	if old, err := filepath.Glob(filepath.Join(dir, "model*.safetensors*")); err != nil || len(old) > 0 {
		return fmt.Errorf("write safetensors in %s: it holds a checkpoint already (%v): write into an empty directory", dir, old)
	}
	var shards [][]Tensor
	var size, total int64
	seen := make(map[string]bool, len(tensors))
	for _, t := range tensors {
		if err := checkTensor(t); err != nil {
			return fmt.Errorf("write safetensors in %s: tensor %q: %w", dir, t.Name, err)
		}
		if seen[t.Name] { // in another shard, it would make an index that lists it once
			return fmt.Errorf("write safetensors in %s: tensor %q given twice", dir, t.Name)
		}
		seen[t.Name] = true
		if len(shards) == 0 || size > 0 && size+t.size() > maxShard {
			shards, size = append(shards, nil), 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += t.size()
		total += t.size()
	}
	if len(shards) <= 1 {
		return WriteFile(filepath.Join(dir, singleFileName), tensors, metadata)
	}
	weightMap := map[string]string{}
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := WriteFile(filepath.Join(dir, name), sh, metadata); err != nil {
			return err
		}
		for _, t := range sh {
			weightMap[t.Name] = name
		}
	}
	index, err := json.MarshalIndent(map[string]any{
		"metadata":   map[string]any{"total_size": total},
		"weight_map": weightMap,
	}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, indexFileName), append(index, '\n'))
}
