package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// sst2Pages is an SST-2 Parquet file of one row ("fine", 1) whose two
// columns are each one PLAIN data page stored with codec, the sentence
// optional if levels is not nil (its definition levels, in the RLE hybrid
// encoding); edit, when not nil, changes a column's page header and data
// before they are written.
func sst2Pages(tb testing.TB, codec format.CompressionCodec, levels []byte, edit func(col int, h *format.PageHeader, data []byte) []byte) []byte {
	tb.Helper()
	sentence := binary.LittleEndian.AppendUint32(nil, 4)
	sentence = append(sentence, "fine"...)
	repetition := format.Required
	if levels != nil {
		sentence = append(binary.LittleEndian.AppendUint32(nil, uint32(len(levels))), append(levels, sentence...)...)
		repetition = format.Optional
	}
	return pagesFile(tb, codec, []pageColumn{
		{format.SchemaElement{Name: "sentence", Type: thrift.New(format.ByteArray), RepetitionType: thrift.New(repetition)}, sentence},
		{format.SchemaElement{Name: "label", Type: thrift.New(format.Int64), RepetitionType: thrift.New(format.Required)}, binary.LittleEndian.AppendUint64(nil, 1)},
	}, edit)
}

// pageColumn is a column of pagesFile: its schema and its one page's data.
type pageColumn struct {
	schema format.SchemaElement
	data   []byte
}

// pagesFile is a Parquet file of one row group of the columns, each one
// PLAIN data page of one value stored with codec; edit, when not nil,
// changes a column's page header and data before they are written.
func pagesFile(tb testing.TB, codec format.CompressionCodec, columns []pageColumn, edit func(col int, h *format.PageHeader, data []byte) []byte) []byte {
	tb.Helper()
	b := []byte("PAR1")
	var chunks []format.ColumnChunk
	schema := []format.SchemaElement{{Name: "schema", NumChildren: thrift.New(int32(len(columns)))}}
	for i, col := range columns {
		h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: int32(len(col.data)), CompressedPageSize: int32(len(col.data)),
			DataPageHeader: thrift.New(format.DataPageHeader{NumValues: 1, Encoding: format.Plain, DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE})}
		data := col.data
		if edit != nil {
			data = edit(i, &h, data)
		}
		hb, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
		if err != nil {
			tb.Fatal(err)
		}
		off := int64(len(b))
		b = append(append(b, hb...), data...)
		n := int64(len(b)) - off
		chunks = append(chunks, format.ColumnChunk{FileOffset: off, MetaData: format.ColumnMetaData{Type: col.schema.Type.V, Encoding: []format.Encoding{h.DataPageHeader.V.Encoding},
			PathInSchema: []string{col.schema.Name}, Codec: codec, NumValues: 1, TotalUncompressedSize: n, TotalCompressedSize: n, DataPageOffset: off}})
		schema = append(schema, col.schema)
	}
	meta := &format.FileMetaData{Version: 1, NumRows: 1, Schema: schema,
		RowGroups: []format.RowGroup{{Columns: chunks, NumRows: 1, TotalByteSize: int64(len(b) - 4)}}}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), meta)
	if err != nil {
		tb.Fatal(err)
	}
	b = append(b, footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

// manyColumns is a file of n INT64 columns, each a page that states 2^24
// values (and holds one). Each page is within a page's limits; reading a
// row holds a page of every column, and the row group's limit counts 8
// bytes a value.
func manyColumns(tb testing.TB, n int) []byte {
	var cols []pageColumn
	for i := range n {
		cols = append(cols, pageColumn{format.SchemaElement{Name: fmt.Sprint("c", i), Type: thrift.New(format.Int64),
			RepetitionType: thrift.New(format.Required)}, make([]byte, 8)})
	}
	return pagesFile(tb, format.Uncompressed, cols, func(_ int, h *format.PageHeader, d []byte) []byte {
		h.DataPageHeader.V.NumValues = maxParquetPageValues
		return d
	})
}

// withFooter is a file of footer alone.
func withFooter(footer []byte) []byte {
	b := append([]byte("PAR1"), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

// sentencePage is an edit of sst2Pages that changes the sentence column's
// page alone.
func sentencePage(fn func(h *format.PageHeader, data []byte) []byte) func(int, *format.PageHeader, []byte) []byte {
	return func(col int, h *format.PageHeader, data []byte) []byte {
		if col == 0 {
			return fn(h, data)
		}
		return data
	}
}

// TestReadParquetBombs: a Parquet file of a few dozen bytes that states a
// page, a run of values or a list far larger than it holds, or nests its
// footer millions deep, or whose LZ4 page is damaged, is an error naming
// the file and what is wrong, with no large allocation first. Before the
// checks of parquetcheck.go parquet-go allocated what each stated (2 to
// 8 GiB, 1.4 GiB for a list of 2^24 row groups in a 61-byte file) or
// crashed the program (a stack overflow on the footer of 8 MB, an ever
// doubling buffer on the LZ4 page).
func TestReadParquetBombs(t *testing.T) {
	const big = 1<<31 - 1
	nested := []byte{0xfc} // field 15, a struct FileMetaData does not have, holding structs 1<<20 deep
	nested = append(nested, bytes.Repeat([]byte{0x1c}, 1<<20)...)
	nested = append(nested, make([]byte, 1<<20+2)...)
	cases := []struct {
		name, want string
		file       []byte
	}{
		{"valid", "", sst2Pages(t, format.Uncompressed, nil, nil)},
		{"page of 2 GiB", "its data claims 2147483647 bytes, and its column chunk has 8 left",
			sst2Pages(t, format.Uncompressed, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte { h.CompressedPageSize = big; return d }))},
		{"page of 2 GiB decompressed", "it claims 2147483647 bytes decompressed",
			sst2Pages(t, format.Snappy, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte { h.UncompressedPageSize = big; return d }))},
		{"page of 2^31 values", "it claims 2147483647 values",
			sst2Pages(t, format.Uncompressed, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte { h.DataPageHeader.V.NumValues = big; return d }))},
		{"snappy block of 4 GiB", "SNAPPY data: it claims 4294967295 bytes decompressed",
			sst2Pages(t, format.Snappy, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte {
				d = binary.AppendUvarint(nil, 1<<32-1)
				h.CompressedPageSize = int32(len(d))
				return d
			}))},
		{"zstd frame of 1 GiB", "ZSTD data: decompressed size exceeds",
			sst2Pages(t, format.Zstd, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte {
				// A frame of a 1 KiB window stating a content size of 2^30 (in 4 bytes), then an RLE block of 1 byte.
				d = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x80, 0, 0, 0, 0, 0x40, 0x0b, 0, 0, 'x'}
				h.CompressedPageSize = int32(len(d))
				return d
			}))},
		{"damaged LZ4 page", "LZ4_RAW data", sst2Pages(t, format.Lz4Raw, nil, nil)},  // PLAIN bytes are no LZ4 block
		{"valid optional", "", sst2Pages(t, format.Uncompressed, []byte{2, 1}, nil)}, // a run of one level 1
		{"definition levels of 2^31 values", "levels: its runs hold more than the page's 1 values",
			sst2Pages(t, format.Uncompressed, append(binary.AppendUvarint(nil, big<<1), 1), nil)},
		{"delta lengths of 2^31 values", "DELTA_BINARY_PACKED data claims 2147483647 values",
			sst2Pages(t, format.Uncompressed, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte {
				h.DataPageHeader.V.Encoding = format.DeltaLengthByteArray
				d = binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(nil, 128), 4), big)
				d = append(d, 0, 0)
				h.CompressedPageSize, h.UncompressedPageSize = int32(len(d)), int32(len(d))
				return d
			}))},
		{"DELTA_BYTE_ARRAY", "encoding DELTA_BYTE_ARRAY is not supported",
			sst2Pages(t, format.Uncompressed, nil, sentencePage(func(h *format.PageHeader, d []byte) []byte {
				h.DataPageHeader.V.Encoding = format.DeltaByteArray
				return d
			}))},
		{"row group of 9 pages of 2^24 values", "row group 0: its columns' pages take more than 1073741824 bytes together", manyColumns(t, 9)},
		{"footer list of 2^24 row groups", "footer: a list of 16777216 claims more than the 4 bytes left",
			withFooter([]byte{0x15, 0x02, 0x19, 0x1c, 0x48, 0x04, 's', 'c', 'h', 'm', 0x00, 0x16, 0x00, 0x19, 0xfc, 0x80, 0x80, 0x80, 0x08, 0x00, 0x00, 0x00, 0x00})},
		{"footer nested 2^20 deep", "footer: structures nested more than 64 deep", withFooter(nested)},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "x.parquet")
			if err := os.WriteFile(p, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			exs, _, err := ReadAll(p, SST2, ReadOptions{})
			runtime.ReadMemStats(&ms)
			if mb := float64(ms.TotalAlloc-before) / (1 << 20); mb > 32 {
				t.Errorf("%.0f MiB allocated", mb)
			}
			if tc.want == "" {
				if err != nil || len(exs) != 1 || exs[0].Sentence != "fine" || exs[0].Label != 1 {
					t.Fatalf("%+v, %v; want the row (fine, 1)", exs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, p, tc.want)
			}
		})
	}
}

// TestCheckPageContent: a dictionary page is held to the encodings a data
// page is (parquet-go decodes it with the encoding it states), and the
// levels of a version 1 page are read with their own encodings.
func TestCheckPageContent(t *testing.T) {
	bomb := binary.AppendUvarint(nil, 1<<20<<1) // an RLE run of 2^20 values
	bomb = append(bomb, 1)
	withLength := func(b []byte) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...) }
	leaf := parquet.LeafColumn{MaxRepetitionLevel: 1, MaxDefinitionLevel: 1}
	for _, tc := range []struct {
		name string
		h    format.PageHeader
		data []byte
		want string
	}{
		{"dictionary of DELTA_BYTE_ARRAY", format.PageHeader{Type: format.DictionaryPage,
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: 1, Encoding: format.DeltaByteArray})}, []byte{0}, "encoding DELTA_BYTE_ARRAY is not supported"},
		{"dictionary of PLAIN_DICTIONARY", format.PageHeader{Type: format.DictionaryPage,
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: 1, Encoding: format.PlainDictionary})}, []byte{1, 0, 0, 0, 'a'}, ""},
		{"repetition levels bit-packed", format.PageHeader{Type: format.DataPage, DataPageHeader: thrift.New(format.DataPageHeader{NumValues: 1,
			Encoding: format.Plain, RepetitionLevelEncoding: format.BitPacked, DefinitionLevelEncoding: format.RLE})},
			append(withLength(bomb), withLength([]byte{2, 1})...), ""},
		{"definition levels of 2^20", format.PageHeader{Type: format.DataPage, DataPageHeader: thrift.New(format.DataPageHeader{NumValues: 1,
			Encoding: format.Plain, RepetitionLevelEncoding: format.BitPacked, DefinitionLevelEncoding: format.RLE})},
			append(withLength([]byte{2, 1}), withLength(bomb)...), "levels: its runs hold more than the page's 1 values"},
	} {
		pc := pageChecker{data: tc.data}
		_, err := pc.content(&tc.h, format.Uncompressed, leaf)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestReadParquetClosesFile: a Parquet file refused at any stage is closed
// (fuzzing found the file of a refused footer left open: a few thousand
// damaged files ran the process out of descriptors).
func TestReadParquetClosesFile(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files in")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no finalizer closes what leaks
	dir := t.TempDir()
	files := [][]byte{[]byte("000"), []byte("PAR1\x00\x00\x00\x00\xff\xff\xff\x7fPAR1"), withFooter([]byte{0xfc, 0x1c}),
		sst2Pages(t, format.Lz4Raw, nil, nil), sst2Pages(t, format.Uncompressed, nil, nil)}
	open := func() int { fds, _ := os.ReadDir("/proc/self/fd"); return len(fds) }
	before := open()
	for i, b := range files {
		p := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			ReadAll(p, SST2, ReadOptions{})
			ReadImageParquet(p, PetsClasses)
		}
	}
	if after := open(); after > before {
		t.Errorf("%d files open before, %d after reading %d files 40 times each", before, after, len(files))
	}
}

// TestReadParquetEveryForm: the page checks take every form parquet-go
// writes: version 1 and 2 data pages, each encoding but DELTA_BYTE_ARRAY
// (dictionaries included), each codec, pages of a few rows, and the
// repeated and optional columns of SQuAD (repetition and definition levels).
// Each file reads as the default one does.
func TestReadParquetEveryForm(t *testing.T) {
	var rows []hubSquad
	for i := range 300 {
		sq := hubSquad{ID: fmt.Sprint("q", i), Title: fmt.Sprint("T", i%3), Context: strings.Repeat("context ", i%7+1), Question: "Q?"}
		sq.Answers.Text, sq.Answers.AnswerStart = []string{"a", fmt.Sprint("b", i)}[:i%2+1], []int32{0, 1}[:i%2+1]
		rows = append(rows, sq)
	}
	want, _, err := ReadAll(writeParquet(t, rows), SQuAD, ReadOptions{Strict: true})
	if err != nil || len(want) != len(rows) {
		t.Fatalf("the default file: %d examples, %v", len(want), err)
	}
	encodings := []encoding.Encoding{&parquet.Plain, &parquet.RLEDictionary, &parquet.DeltaLengthByteArray}
	codecs := []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Zstd, &parquet.Gzip, &parquet.Brotli, &parquet.Lz4Raw}
	for _, version := range []int{1, 2} {
		for _, enc := range encodings {
			for _, codec := range codecs {
				var buf bytes.Buffer
				w := parquet.NewGenericWriter[hubSquad](&buf, parquet.DataPageVersion(version), parquet.Compression(codec),
					parquet.DefaultEncodingFor(parquet.ByteArray, enc), parquet.PageBufferSize(256))
				if _, err := w.Write(rows); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(t.TempDir(), "x.parquet")
				if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				got, _, err := ReadAll(p, SQuAD, ReadOptions{Strict: true})
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("version %d, %s, %s: %d examples, %v", version, enc, codec, len(got), err)
				}
			}
		}
	}
}
