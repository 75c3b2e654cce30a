package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// produced is a float32 tensor whose bytes are made while it is written.
func produced(name string, shape []int, v []float32) Tensor {
	return Tensor{Name: name, Dtype: F32, Shape: shape, Produce: func(w io.Writer) error {
		b := make([]byte, 4)
		for _, x := range v {
			binary.LittleEndian.PutUint32(b, math.Float32bits(x))
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	}}
}

// TestWriteSharded: tensors fill shards in order up to the limit, the index
// lists every tensor's shard and the total size, and OpenCheckpoint reads
// the values back; one shard is a single model.safetensors.
func TestWriteSharded(t *testing.T) {
	var tensors []Tensor
	want := map[string][]float32{}
	for i := range 5 {
		v := make([]float32, 10*(i+1))
		for j := range v {
			v[j] = float32(i*100 + j)
		}
		name := fmt.Sprintf("layer.%d.weight", i)
		want[name] = v
		if i%2 == 0 {
			tensors = append(tensors, produced(name, []int{i + 1, 10}, v))
		} else {
			tensors = append(tensors, F32Tensor(name, []int{i + 1, 10}, v))
		}
	}
	for _, c := range []struct {
		maxShard int64
		files    []string
	}{
		{1 << 20, []string{"model.safetensors"}},
		// 40, 80, 120, 160, 200 bytes: [40 80] [120] [160] [200].
		{150, []string{"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors", "model-00003-of-00004.safetensors",
			"model-00004-of-00004.safetensors", "model.safetensors.index.json"}},
	} {
		dir := t.TempDir()
		if err := WriteSharded(dir, tensors, map[string]string{"format": "pt"}, c.maxShard); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, c.files) {
			t.Fatalf("max %d: files %v, want %v", c.maxShard, names, c.files)
		}
		ck, err := OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range want {
			got, err := ck.Float32(name)
			if err != nil || !slices.Equal(got, v) {
				t.Errorf("max %d: %s = %v, %v", c.maxShard, name, got, err)
			}
		}
		ck.Close()
		if len(c.files) > 1 {
			var index struct {
				Metadata struct {
					TotalSize int64 `json:"total_size"`
				} `json:"metadata"`
				WeightMap map[string]string `json:"weight_map"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, indexFileName))
			if err := json.Unmarshal(b, &index); err != nil || index.Metadata.TotalSize != 600 || index.WeightMap["layer.1.weight"] != c.files[0] {
				t.Errorf("index %s: %+v, %v", b, index, err)
			}
		}
	}
}

// TestProduceWrongSize: a Produce that writes another number of bytes than
// the tensor's shape takes fails the write, and leaves no file.
func TestProduceWrongSize(t *testing.T) {
	dir := t.TempDir()
	bad := produced("w", []int{3}, []float32{1, 2}) // 8 bytes for a 12-byte tensor
	err := WriteFile(filepath.Join(dir, "model.safetensors"), []Tensor{bad}, nil)
	if err == nil || !strings.Contains(err.Error(), "produced 8 bytes") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}
