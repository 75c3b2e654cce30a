package data

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// parquetColumns are the HF hub columns each task needs. A path ending in
// "[]" is a list column inside a struct (answers.text): any leaf under it is
// taken, whatever the writer named the list's inner nodes (list.element,
// list.item, array).
var parquetColumns = map[Task][]string{
	SST2:  {"sentence", "label", "idx?"},
	SQuAD: {"id", "title", "context", "question", "answers.text[]"},
	XSum:  {"document", "summary", "id"},
}

// readParquet reads an HF hub Parquet file row group by row group, a few rows
// at a time, through the file's own schema, so any row count fits in memory.
// A damaged file is an error naming it (openParquet).
func readParquet(path string, task Task, emit func(Example) error, bad func(*RowError) error) error {
	f, leaves, rows, err := openParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer rows.Close()
	// Map each needed column name to its leaf column index.
	index := map[string]int{}
	for _, want := range parquetColumns[task] {
		name, optional := want, false
		if name[len(name)-1] == '?' {
			name, optional = name[:len(name)-1], true
		}
		i := findLeaf(leaves, name)
		if i < 0 {
			if optional {
				continue
			}
			return fmt.Errorf("%s: column %q is missing (the file has %v); want the HF hub schema of %s",
				path, name, joinPaths(leaves), task)
		}
		index[name] = i
	}

	buf := make([]parquet.Row, 64)
	for n := 0; ; {
		var k int
		err := parquetCall(func() (err error) { k, err = rows.ReadRows(buf); return err })
		for _, row := range buf[:k] {
			ex, field, msg := parquetExample(row, task, index)
			if field == "" {
				field, msg = checkExample(&ex)
			}
			if ex.ID == "" {
				ex.ID = fmt.Sprint(n)
			}
			if field != "" {
				if e := bad(&RowError{path, fmt.Sprintf("row %d", n), field, msg}); e != nil {
					return e
				}
			} else if e := emit(ex); e != nil {
				return e
			}
			n++
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", path, n, err)
		}
	}
}

// openParquet opens a Parquet file for reading row by row through its own
// schema, whose leaf columns it returns. A damaged file is an error naming
// it: the footer's length is checked against the file's size, and the
// footer and every page (checkParquetMetadata, checkParquetPages) before
// parquet-go trusts what they state; parquet-go panics on some damage (a
// negative length in its metadata), which parquetCall catches. The page
// index and Bloom filters serve lookups; a sequential read needs neither
// (and they are more metadata to trust).
func openParquet(path string) (_ *os.File, leaves [][]string, rows *parquet.Reader, err error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: %w", path, err)
	}
	size := info.Size()
	if err := checkParquetFooter(f, size); err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: not a Parquet file: %w", path, err)
	}
	if err := checkParquetMetadata(f, size); err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: not a Parquet file: %w", path, err)
	}
	var pf *parquet.File
	if err := parquetCall(func() (err error) {
		pf, err = parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		return err
	}); err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: not a Parquet file: %w", path, err)
	}
	if err := parquetCall(func() error { return checkParquetPages(f, size, pf) }); err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: damaged: %w", path, err)
	}
	if err := parquetCall(func() error { leaves, rows = pf.Schema().Columns(), parquet.NewReader(pf); return nil }); err != nil {
		return nil, nil, nil, fmt.Errorf("load %s: not a Parquet file: %w", path, err)
	}
	return f, leaves, rows, nil
}

// parquetCall runs a call into parquet-go, turning a panic of it on a
// damaged file into an error.
func parquetCall(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged or truncated (parquet-go: %v)", r)
		}
	}()
	return fn()
}

// checkParquetFooter checks that the file ends with a footer length and
// "PAR1", and that the footer fits in the file between the leading and the
// trailing magic bytes.
func checkParquetFooter(f io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%d bytes, too short", size)
	}
	var tail [8]byte
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("no PAR1 at its end (truncated?)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("its footer claims %d bytes, but the file has %d (truncated?)", n, size)
	}
	return nil
}

// findLeaf returns the leaf column index for a dotted name; "a.b[]" matches
// the first leaf under a.b.
func findLeaf(leaves [][]string, name string) int {
	list := name[len(name)-2:] == "[]"
	if list {
		name = name[:len(name)-2]
	}
	want := splitDots(name)
	for i, p := range leaves {
		if list && len(p) > len(want) && slices.Equal(p[:len(want)], want) {
			return i
		}
		if !list && slices.Equal(p, want) {
			return i
		}
	}
	return -1
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func joinPaths(leaves [][]string) []string {
	out := make([]string, len(leaves))
	for i, p := range leaves {
		for j, s := range p {
			if j > 0 {
				out[i] += "."
			}
			out[i] += s
		}
	}
	return out
}

// parquetText reads a text value: a byte array holding UTF-8. An id may
// also be an integer (pandas writes XSum's ids as int64), kept in decimal.
func parquetText(v parquet.Value, id bool) (text, msg string) {
	switch k := v.Kind(); {
	case k == parquet.ByteArray || k == parquet.FixedLenByteArray:
		b := v.ByteArray()
		if !utf8.Valid(b) {
			return "", notUTF8(b)
		}
		return string(b), ""
	case id && k == parquet.Int32:
		return strconv.FormatInt(int64(v.Int32()), 10), ""
	case id && k == parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10), ""
	default:
		return "", fmt.Sprintf("want text, got %v", k)
	}
}

// parquetExample builds an Example from one row's values; field and msg
// name the first value that could not be read, and why.
func parquetExample(row parquet.Row, task Task, index map[string]int) (ex Example, field, msg string) {
	ex.Task = task
	r := &parquetRow{values: map[int][]parquet.Value{}, index: index}
	for _, v := range row {
		r.values[v.Column()] = append(r.values[v.Column()], v)
	}
	switch task {
	case SST2:
		r.sst2(&ex)
	case SQuAD:
		r.squad(&ex)
	case XSum:
		r.texts(textField{"document", &ex.Document}, textField{"summary", &ex.Summary}, textField{"id", &ex.ID})
	}
	return ex, r.field, r.msg
}

// parquetRow is one row's values by column, read by field name. field and
// msg are the first field that could not be read and why: a read after it
// reads nothing.
type parquetRow struct {
	values     map[int][]parquet.Value
	index      map[string]int
	field, msg string
}

// fail records why name could not be read.
func (r *parquetRow) fail(name, msg string) {
	r.field, r.msg = name, msg
}

// one is name's value, which must be there once and not null.
func (r *parquetRow) one(name string) (parquet.Value, bool) {
	vs := r.values[r.index[name]]
	if len(vs) != 1 || vs[0].IsNull() {
		r.fail(name, "null or missing")
		return parquet.Value{}, false
	}
	return vs[0], true
}

// textField is a text column and where its value goes.
type textField struct {
	name string
	dst  *string
}

// texts reads text fields, stopping at the first that cannot be read.
func (r *parquetRow) texts(fields ...textField) bool {
	for _, f := range fields {
		v, ok := r.one(f.name)
		if !ok {
			return false
		}
		s, m := parquetText(v, f.name == "id")
		if m != "" {
			r.fail(f.name, m)
			return false
		}
		*f.dst = s
	}
	return true
}

// integer reads an integer field.
func (r *parquetRow) integer(name string) (int64, bool) {
	v, ok := r.one(name)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case parquet.Int32:
		return int64(v.Int32()), true
	case parquet.Int64:
		return v.Int64(), true
	}
	r.fail(name, fmt.Sprintf("want an integer, got %v", v.Kind()))
	return 0, false
}

// sst2 reads an SST-2 row: sentence, label, and idx where the file has it.
func (r *parquetRow) sst2(ex *Example) {
	if !r.texts(textField{"sentence", &ex.Sentence}) {
		return
	}
	label, ok := r.integer("label")
	if !ok {
		return
	}
	ex.Label = int(label)
	if _, has := r.index["idx"]; has {
		if idx, ok := r.integer("idx"); ok {
			ex.ID = fmt.Sprint(idx)
		}
	}
}

// squad reads a SQuAD row: its texts, then the answers' list.
func (r *parquetRow) squad(ex *Example) {
	if !r.texts(textField{"id", &ex.ID}, textField{"title", &ex.Title}, textField{"context", &ex.Context}, textField{"question", &ex.Question}) {
		return
	}
	for _, v := range r.values[r.index["answers.text[]"]] {
		if v.IsNull() {
			continue // an empty list is a single null; checkExample reports it
		}
		a, m := parquetText(v, false)
		if m != "" {
			r.fail("answers.text", m)
			return
		}
		ex.Answers = append(ex.Answers, a)
	}
}
