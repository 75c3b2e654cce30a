package data

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/clip"
)

// readGLUETSV reads GLUE's SST-2 TSV: a header naming the columns (sentence,
// label, optionally idx or index), then one unquoted row per line. The
// sentence is kept byte for byte, trailing space included, as GLUE and HF
// have it.
func readGLUETSV(path string, emit func(Example) error, bad func(*RowError) error) error {
	f, err := openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br, _, err := textReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	header, long, err := readLine(br)
	if err == nil && long > 0 {
		err = fmt.Errorf("%d bytes, past a line's limit of %d bytes", long, maxRowBytes)
	}
	if err != nil {
		return fmt.Errorf("%s: line 1: reading the header: %w", path, err)
	}
	names := strings.Split(header, "\t")
	col := map[string]int{}
	for i, name := range names {
		if j, twice := col[name]; twice {
			return fmt.Errorf("%s: line 1: the header names column %q twice (columns %d and %d): which one holds the data cannot be told; rename or remove one", path, name, j+1, i+1)
		}
		col[name] = i
	}
	sentenceCol, ok1 := col["sentence"]
	labelCol, ok2 := col["label"]
	if !ok1 || !ok2 {
		return fmt.Errorf("%s: line 1: header %s lacks the sentence and label columns (a GLUE TSV begins with a sentence<TAB>label header)", path, clip.Quote(header))
	}
	idCol, hasID := col["idx"]
	if !hasID {
		idCol, hasID = col["index"]
	}
	for line := 2; ; line++ {
		text, long, err := readLine(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		row := fmt.Sprintf("line %d", line)
		if long > 0 {
			msg := fmt.Sprintf("%d bytes, past a row's limit of %d bytes (is the file one row a line?)", long, maxRowBytes)
			if e := bad(&RowError{path, row, "(line)", msg}); e != nil {
				return e
			}
			continue
		}
		if text == "" {
			continue
		}
		if !utf8.ValidString(text) {
			if e := bad(&RowError{path, row, "(line)", notUTF8([]byte(text))}); e != nil {
				return e
			}
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) != len(names) {
			if e := bad(&RowError{path, row, "sentence", fmt.Sprintf("want %d tab-separated columns, got %d", len(names), len(fields))}); e != nil {
				return e
			}
			continue
		}
		ex := Example{Task: SST2, Sentence: fields[sentenceCol], ID: strconv.Itoa(line - 2)}
		if hasID {
			ex.ID = fields[idCol]
		}
		label, err := strconv.Atoi(strings.TrimSpace(fields[labelCol]))
		if err != nil {
			if e := bad(&RowError{path, row, "label", fmt.Sprintf("not an integer: %s", clip.Quote(fields[labelCol]))}); e != nil {
				return e
			}
			continue
		}
		ex.Label = label
		if field, msg := checkExample(&ex); field != "" {
			if e := bad(&RowError{path, row, field, msg}); e != nil {
				return e
			}
			continue
		}
		if err := emit(ex); err != nil {
			return err
		}
	}
}

// readLine returns the next line without its "\n" or "\r\n"; io.EOF after
// the last. A line longer than maxRowBytes is read to its end without being
// kept (bounded memory, as for JSON Lines): its length comes back as long.
func readLine(br *bufio.Reader) (s string, long int64, err error) {
	b, long, err := readRow(br, maxRowBytes)
	if err == io.EOF && (len(b) > 0 || long > 0) {
		err = nil
	}
	if err != nil {
		return "", 0, err
	}
	s = strings.TrimSuffix(string(b), "\n")
	return strings.TrimSuffix(s, "\r"), long, nil
}
