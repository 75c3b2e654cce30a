package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/inputfile"
)

// ReadOptions control how a file is read.
type ReadOptions struct {
	// Strict stops at the first malformed row; otherwise it is reported to
	// OnSkip and left out.
	Strict bool
	// OnSkip receives each skipped malformed row (nil: they are only counted).
	OnSkip func(*RowError)
	// Limit stops after this many examples (0: no limit).
	Limit int
	// Own is the config's part of a task on the user's own data: the
	// labels a classification row's label is read against, and the
	// instruction its examples carry (Example.Own). Classification needs it.
	Own *OwnTask
}

// RowError is a malformed row: which file, which row, which field, and why.
type RowError struct {
	File  string
	Row   string // "line 7", "row 12" (Parquet, 0-based) or "data[3].paragraphs[1].qas[0]"
	Field string
	Msg   string
}

func (e *RowError) Error() string {
	if e.Field == "" || strings.HasPrefix(e.Field, "(") {
		// "(line)", "(article)": the whole row is wrong, no field to name
		// (`line 9: not a JSON object`, not `field "(line)"`).
		return fmt.Sprintf("%s: %s: %s", e.File, e.Row, e.Msg)
	}
	return fmt.Sprintf("%s: %s: field %q: %s", e.File, e.Row, e.Field, e.Msg)
}

// ReadStats says how a read went.
type ReadStats struct {
	Examples int // passed to the callback
	Skipped  int // malformed rows left out
	// Unread: the keys of a classification's or a generation's rows that
	// the task does not read (a mistyped "refrences", or the user's own
	// metadata), the first maxUnreadKeys of them in the order met;
	// MoreUnread counts the other keys.
	Unread     []UnreadKey
	MoreUnread int
}

// errStop ends a read early (Limit reached) without an error.
var errStop = errors.New("stop")

// Read streams the examples of task in path to fn, one at a time, so a file
// of any size is read in bounded memory. The format comes from the file
// name: .parquet (HF hub), .tsv (GLUE SST-2), .json (official SQuAD),
// .jsonl (JSON Lines with the HF field names; the tasks on the user's own
// data read it only, with ownRow's field names).
func Read(path string, task Task, opt ReadOptions, fn func(Example) error) (ReadStats, error) {
	var st ReadStats
	emit := func(ex Example) error {
		if err := fn(ex); err != nil {
			return err
		}
		st.Examples++
		if opt.Limit > 0 && st.Examples >= opt.Limit {
			return errStop
		}
		return nil
	}
	bad := func(e *RowError) error {
		if opt.Strict {
			return e
		}
		st.Skipped++
		if opt.OnSkip != nil {
			opt.OnSkip(e)
		}
		return nil
	}
	ext := strings.ToLower(filepath.Ext(path))
	if task.OwnData() {
		if err := checkOwnRead(path, ext, task, opt.Own); err != nil {
			return st, err
		}
	}
	var err error
	switch ext {
	case ".parquet":
		err = readParquet(path, task, emit, bad)
	case ".tsv":
		if task != SST2 {
			return st, fmt.Errorf("%s: TSV is GLUE's SST-2 format, not %s", path, task)
		}
		err = readGLUETSV(path, emit, bad)
	case ".json":
		if task != SQuAD {
			return st, fmt.Errorf("%s: .json is the official SQuAD format, not %s (use .jsonl)", path, task)
		}
		err = readSquadJSON(path, emit, bad)
	case ".jsonl":
		err = readJSONL(path, task, opt.Own, emit, bad, st.noteUnread)
	default:
		return st, fmt.Errorf("%s: unknown format %q (want .parquet, .tsv, .json or .jsonl)", path, ext)
	}
	if errors.Is(err, errStop) {
		err = nil
	}
	return st, err
}

// ReadAll reads every example of path into memory.
func ReadAll(path string, task Task, opt ReadOptions) ([]Example, ReadStats, error) {
	var out []Example
	st, err := Read(path, task, opt, func(ex Example) error {
		out = append(out, ex)
		return nil
	})
	return out, st, err
}

// openFile opens path, naming it in the error.
func openFile(path string) (*os.File, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return f, nil
}

// checkExample reports the first missing or invalid field of ex, if any.
// Field names are the HF hub's.
func checkExample(ex *Example) (field, msg string) {
	switch ex.Task {
	case SST2:
		if ex.Label != 0 && ex.Label != 1 {
			return "label", fmt.Sprintf("want 0 or 1, got %d", ex.Label)
		}
		if strings.TrimSpace(ex.Sentence) == "" {
			return "sentence", "empty"
		}
	case SQuAD:
		switch {
		case strings.TrimSpace(ex.Context) == "":
			return "context", "empty"
		case strings.TrimSpace(ex.Question) == "":
			return "question", "empty"
		case len(ex.Answers) == 0:
			return "answers", "no answer"
		}
		for i, a := range ex.Answers {
			if strings.TrimSpace(a) == "" { // as a generation's references
				return "answers", fmt.Sprintf("answer %d is blank: an empty answer would score as right and train the model to say nothing", i)
			}
		}
	case XSum:
		// The HF XSum splits hold a few empty documents (validation row 818
		// of the shared subset is one); they are real rows and are kept.
	case Classification:
		if strings.TrimSpace(ex.Text) == "" {
			return "text", "empty"
		}
	case Generation:
		switch {
		case strings.TrimSpace(ex.Prompt) == "":
			return "prompt", "empty"
		case strings.TrimSpace(ex.Completion) == "":
			return "completion", "empty: there would be no answer to train"
		}
	}
	return "", ""
}

// JSONKind names the JSON a Go type decodes from, for messages (not the Go
// type's own name).
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// textReader buffers a text file and skips a UTF-8 byte-order mark at its
// start (editors on Windows write one), which no format here allows; bom is
// how many bytes it skipped, for byte offsets in messages. A UTF-16 file
// (its byte-order mark) is an error: read as UTF-8, its first line would be
// refused and the others read as bytes with NULs between them.
func textReader(f io.Reader) (br *bufio.Reader, bom int64, err error) {
	br = bufio.NewReaderSize(f, 1<<16)
	if b, err := br.Peek(2); err == nil && (string(b) == "\xff\xfe" || string(b) == "\xfe\xff") {
		return nil, 0, fmt.Errorf("the file is UTF-16 text (its byte-order mark is % X; Windows PowerShell's > writes it): save it as UTF-8", b)
	}
	if b, err := br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		br.Discard(3)
		return br, 3, nil
	}
	return br, 0, nil
}

// notUTF8 is the message for text b that is not valid UTF-8: where the
// first bad byte is (its byte offset within the row or field, counted from
// 0) and the likely cause. A file saved as Latin-1 or Windows-1252 (Excel's
// CSV export, older editors) holds bytes 0x80-0xFF alone; every byte is a
// character there, so the file converts as a whole.
func notUTF8(b []byte) string {
	at := 0
	for at < len(b) {
		r, n := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	msg := "not UTF-8 text"
	if at < len(b) {
		msg += fmt.Sprintf(": byte 0x%02X at offset %d", b[at], at)
		if b[at] >= 0x80 {
			msg += " (a Latin-1 or Windows-1252 file? convert it: iconv -f WINDOWS-1252 -t UTF-8 IN > OUT)"
		}
	}
	return msg
}
