package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/tokenizer"
)

// squadTrainSized writes the shared 44-article train subset repeated 8 times
// (95,016 questions, ~30 MB: the size of the full SQuAD train set) and returns its path.
func squadTrainSized(b *testing.B) (string, int64) {
	raw, err := os.ReadFile(filepath.Join(fixture.Dir(b), "data/squad/train-v1.1-subset.json"))
	if err != nil {
		b.Fatal(err)
	}
	var f struct {
		Data    []json.RawMessage `json:"data"`
		Version string            `json:"version"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Fatal(err)
	}
	var big []json.RawMessage
	for range 8 {
		big = append(big, f.Data...)
	}
	f.Data = big
	out, _ := json.Marshal(f)
	p := filepath.Join(b.TempDir(), "train-sized.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		b.Fatal(err)
	}
	return p, int64(len(out))
}

// BenchmarkReadSquadTrainSized streams a SQuAD-train-sized official JSON
// file and reports examples/s and the peak live heap (sampled), which stays
// a fraction of the file size because articles are decoded one at a time.
func BenchmarkReadSquadTrainSized(b *testing.B) {
	path, size := squadTrainSized(b)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	n := 0
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		n = 0
		_, err := Read(path, SQuAD, ReadOptions{Strict: true}, func(Example) error {
			n++
			if n%5000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "examples/s")
	b.ReportMetric(float64(peak)/float64(size), "peak-heap/file-size")
}

// BenchmarkEncodeSquad renders and tokenizes SQuAD training examples (prompt
// and full conversation, label mask) with each real tokenizer.
func BenchmarkEncodeSquad(b *testing.B) {
	dir := fixture.Dir(b)
	exs, _, err := ReadAll(filepath.Join(dir, "data/squad/train-v1.1-subset.json"), SQuAD, ReadOptions{Limit: 2000})
	if err != nil {
		b.Fatal(err)
	}
	for _, model := range []string{"llama3.2", "qwen3"} {
		tok, err := tokenizer.Load(filepath.Join(dir, "fixtures/tokenizers", model))
		if err != nil {
			b.Fatal(err)
		}
		enc := &Encoder{Tok: tok}
		b.Run(model, func(b *testing.B) {
			tokens := 0
			for i := range b.N {
				e, err := enc.Encode(exs[i%len(exs)])
				if err != nil {
					b.Fatal(err)
				}
				tokens += len(e.IDs)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "examples/s")
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
