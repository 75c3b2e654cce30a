package data

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// craftParquet is a Parquet file of no data: "PAR1", meta as its footer,
// the footer's length, "PAR1".
func craftParquet(t *testing.T, meta *format.FileMetaData) []byte {
	t.Helper()
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), meta)
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte("PAR1"), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

// TestReadParquetDamaged: a damaged Parquet file is an error naming it,
// never a panic or a footer-sized allocation of gigabytes. The crafted
// files are what fuzzing found (parquet-go panicked on each); then every
// truncation and every single-byte change of a small valid file.
func TestReadParquetDamaged(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"footer of 2 GiB", []byte("PAR1\x00\x00\x00\x00\xff\xff\xff\x7fPAR1"), "footer claims 2147483647 bytes"},
		{"no magic at the end", []byte("PAR1\x00\x00\x00\x00\x04\x00\x00\x00PAR2"), "no PAR1 at its end"},
		{"negative page index length", craftParquet(t, &format.FileMetaData{
			Schema:    []format.SchemaElement{{Name: "schema", NumChildren: thrift.New[int32](1)}, {Name: "sentence", Type: thrift.New(format.ByteArray)}},
			RowGroups: []format.RowGroup{{Columns: []format.ColumnChunk{{ColumnIndexOffset: 4, ColumnIndexLength: -1}}}},
		}), "x.parquet"},
		{"negative child count", craftParquet(t, &format.FileMetaData{
			Schema: []format.SchemaElement{{Name: "schema", NumChildren: thrift.New[int32](-2)}},
		}), "not a Parquet file: damaged or truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "x.parquet")
			if err := os.WriteFile(p, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadAll(p, SST2, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, p, tc.want)
			}
		})
	}

	sq := hubSquad{ID: "q1", Title: "T", Context: "the context", Question: "Q?"}
	sq.Answers.Text, sq.Answers.AnswerStart = []string{"a1", "a2"}, []int32{0, 1}
	good, err := os.ReadFile(writeParquet(t, []hubSquad{sq, sq, sq}))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "damaged.parquet")
	read := func(b []byte) error {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := ReadAll(p, SQuAD, ReadOptions{Strict: true})
		return err
	}
	for n := range len(good) {
		if err := read(good[:n]); err == nil {
			t.Fatalf("the first %d of %d bytes read without an error", n, len(good))
		}
	}
	for i := range good {
		b := []byte(string(good))
		b[i] ^= 0xff
		read(b) // an error or, where the byte was data, a changed example: not a panic
	}
}
