package data

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// The fuzz targets below run their seeds in every `go test`; `make fuzz`
// fuzzes them. Each input must give examples or an error: no panic, no hang,
// no gigabytes (fuzzguard).

// readFuzzed writes b as a file of the given extension and reads it, strict
// and not, and formats every example it gives, as the trainer does.
func readFuzzed(t *testing.T, b []byte, ext string, task Task) {
	p := filepath.Join(t.TempDir(), "in"+ext)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fuzzguard.Run(func() {
		var own *OwnTask
		if task == Classification {
			own = &OwnTask{Instruction: "Rate it.", Labels: []string{"bad", "good", "1"}}
		}
		for _, strict := range []bool{false, true} {
			exs, _, err := ReadAll(p, task, ReadOptions{Strict: strict, Own: own, OnSkip: func(e *RowError) { _ = e.Error() }})
			if err != nil {
				continue
			}
			for _, ex := range exs {
				Prompt(ex)
				if _, err := Target(ex); err != nil && task.OwnData() {
					t.Fatalf("example %q read, but it has no target: %v", ex.ID, err)
				}
				Conversation(ex)
			}
		}
	})
}

// FuzzReadText: GLUE TSV, the official SQuAD JSON and JSON Lines.
func FuzzReadText(f *testing.F) {
	formats := []struct {
		ext  string
		task Task
	}{{".tsv", SST2}, {".json", SQuAD}, {".jsonl", SST2}, {".jsonl", SQuAD}, {".jsonl", XSum}, {".jsonl", Classification}, {".jsonl", Generation}}
	for i, seed := range []string{
		"sentence\tlabel\nhide new secretions \t0\ngreat fun \t1\n",
		`{"version":"1.1","data":[{"title":"T","paragraphs":[{"context":"The cat sat.","qas":[{"id":"q1","question":"Who sat?","answers":[{"answer_start":4,"text":"cat"}]}]}]}]}`,
		`{"sentence":"a fine film","label":1,"idx":0}` + "\n" + `{"sentence":"dull","label":0,"idx":1}` + "\n",
		`{"id":"q1","title":"T","context":"c","question":"q?","answers":{"text":["c"],"answer_start":[0]}}` + "\n",
		`{"document":"A long text.","summary":"Short.","id":"7"}` + "\n",
		`{"text":"a fine film","label":"good"}` + "\n" + `{"text":"dull","label":0,"id":3}` + "\n",
		`{"prompt":"2+2?","completion":"4","references":["four"]}` + "\n" + `{"prompt":"p","completion":"c","id":"x"}` + "\n",
	} {
		f.Add([]byte(seed), uint8(i))
	}
	f.Add([]byte("\xef\xbb\xbfsentence\tlabel\tidx\nx\t1\t7\n\ty\t\n"), uint8(0))
	f.Add([]byte(`{"data":[{"title":null,"paragraphs":[{"context":"c","qas":[{"id":1,"question":"q","answers":[{"text":null}]}]}]}],"x":[]}`), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		ff := formats[int(which)%len(formats)]
		readFuzzed(t, b, ff.ext, ff.task)
	})
}

// parquetBytes is rows as a Parquet file compressed with codec.
func parquetBytes[T any](tb testing.TB, rows []T, codec compress.Codec) []byte {
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows, parquet.Compression(codec)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadParquet: HF hub Parquet files of the three tasks, each codec.
func FuzzReadParquet(f *testing.F) {
	sq := hubSquad{ID: "q1", Title: "T", Context: "ctx", Question: "Q?"}
	sq.Answers.Text, sq.Answers.AnswerStart = []string{"a1", "a2"}, []int32{0, 1}
	for _, c := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Zstd, &parquet.Gzip, &parquet.Brotli, &parquet.Lz4Raw} {
		f.Add(parquetBytes(f, []hubSST2{{0, ptr("hide new secretions "), 0}, {1, nil, 1}, {2, ptr("great fun "), 1}}, c), uint8(0))
		f.Add(parquetBytes(f, []hubSquad{sq, {ID: "q2"}}, c), uint8(1))
		f.Add(parquetBytes(f, []hubXSum{{"doc", "sum", "7"}, {"d2", "s2", "8"}}, c), uint8(2))
	}
	// Files of one page a column, their headers and data in plain sight
	// (parquet_bombs_test.go), the sentence optional in the second.
	f.Add(sst2Pages(f, format.Uncompressed, nil, nil), uint8(0))
	f.Add(sst2Pages(f, format.Uncompressed, []byte{2, 1}, nil), uint8(0))
	tasks := []Task{SST2, SQuAD, XSum}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		readFuzzed(t, b, ".parquet", tasks[int(which)%len(tasks)])
	})
}

// FuzzReadImageParquet: an image classification Parquet file (the HF hub's
// schema: image.bytes, label, image_id): examples whose labels are classes,
// or an error, never a panic.
func FuzzReadImageParquet(f *testing.F) {
	var r petsRow
	r.Image.Bytes, r.Image.Path, r.Label, r.ImageID = []byte("\x89PNG\r\n\x1a\n"), "a.png", 3, "Abyssinian_1"
	for _, c := range []compress.Codec{&parquet.Uncompressed, &parquet.Snappy} {
		f.Add(parquetBytes(f, []petsRow{r, {Label: 36}}, c))
		f.Add(parquetBytes(f, []otherRow{{"s", 1}}, c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "in.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fuzzguard.Run(func() {
			exs, err := ReadImageParquet(p, PetsClasses)
			for _, ex := range exs {
				if err == nil && (ex.Label < 0 || ex.Label >= PetsClasses || len(ex.Image) == 0) {
					t.Fatalf("example %q: label %d, %d bytes", ex.ID, ex.Label, len(ex.Image))
				}
			}
		})
	})
}
