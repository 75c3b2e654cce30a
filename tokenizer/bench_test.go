package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// squadContexts reads the distinct paragraph contexts of SQuAD v1.1 dev: real
// English prose (Wikipedia) of about 150 tokens each.
func squadContexts(b *testing.B) []string {
	path := filepath.Join(fixture.Dir(b), "data", "squad", "dev-v1.1.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var f struct {
		Data []struct {
			Paragraphs []struct {
				Context string `json:"context"`
			} `json:"paragraphs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, a := range f.Data {
		for _, p := range a.Paragraphs {
			out = append(out, p.Context)
		}
	}
	return out
}

// BenchmarkEncode reports tokens/s encoding every SQuAD dev context (no
// special tokens), on one goroutine and on all cores (GOMAXPROCS goroutines).
func BenchmarkEncode(b *testing.B) {
	texts := squadContexts(b)
	for _, name := range models {
		tk := model(b, name)
		total, bytes := 0, 0
		for _, s := range texts {
			total += len(tk.Encode(s, false))
			bytes += len(s)
		}
		b.Run(name+"/single", func(b *testing.B) {
			b.SetBytes(int64(bytes))
			for b.Loop() {
				for _, s := range texts {
					tk.Encode(s, false)
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			var tokens atomic.Int64
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				n := 0
				for pb.Next() {
					n += len(tk.Encode(texts[int(next.Add(1))%len(texts)], false))
				}
				tokens.Add(int64(n))
			})
			b.ReportMetric(float64(tokens.Load())/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkRenderChat measures one SST-2-style conversation rendered with the model's template.
func BenchmarkRenderChat(b *testing.B) {
	msgs := []Message{
		{Role: "system", Content: "You are a sentiment analysis assistant. You will be given a user provided phrase or sentence, and your job will be to output terrible if it has negative sentiment or great if it has positive sentiment."},
		{Role: "user", Content: "Sentence: it 's a charming and often affecting journey . "},
		{Role: "assistant", Content: "Sentiment: great"},
	}
	for _, name := range models {
		tk := model(b, name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tk.RenderChat(msgs, ChatOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeManyAddedLengths encodes 20,000 bytes that could begin an
// added token at every position, with 1,500 added tokens of distinct
// lengths: 1.29 s an encoding when each position tried every length, 3.2 ms
// with the sorted search (Zen 5, 2026-12-02, beside other work).
func BenchmarkEncodeManyAddedLengths(b *testing.B) {
	tok := manyAddedLengths(b)
	text := strings.Repeat("x", 20000)
	for b.Loop() {
		tok.Encode(text, false)
	}
}
