package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/clip"
)

// jsonlRow holds the HF field names of all three tasks. Pointers tell a
// missing field from an empty one.
type jsonlRow struct {
	// SST-2
	Idx      *json.Number `json:"idx"`
	Sentence *string      `json:"sentence"`
	Label    *int         `json:"label"`
	// SQuAD
	ID       json.RawMessage `json:"id"`
	Title    *string         `json:"title"`
	Context  *string         `json:"context"`
	Question *string         `json:"question"`
	Answers  *struct {
		Text []string `json:"text"`
	} `json:"answers"`
	// XSum
	Document *string `json:"document"`
	Summary  *string `json:"summary"`
}

// readJSONL reads one JSON object per line with the HF hub's field names
// (the paper's tasks) or ownRow's (the tasks on the user's own data, whose
// config own gives). A row without an id (SST-2: idx) is named by its
// line, as a TSV or Parquet row without one is by its number, so that its
// prediction, or the note that skips it, can be traced to the file.
func readJSONL(path string, task Task, own *OwnTask, emit func(Example) error, bad func(*RowError) error, unread func(row, key string)) error {
	f, err := openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br, _, err := textReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	first := true // no row seen yet
	for line := 1; ; line++ {
		b, long, rerr := readRow(br, maxRowBytes)
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("%s: line %d: %w", path, line, rerr)
		}
		if long > 0 {
			first = false
			msg := fmt.Sprintf("%d bytes, past a row's limit of %d bytes (is the file one JSON object a line?)", long, maxRowBytes)
			if e := bad(&RowError{path, fmt.Sprintf("line %d", line), "(line)", msg}); e != nil {
				return e
			}
		} else if t := bytes.TrimSpace(b); len(t) > 0 {
			row := fmt.Sprintf("line %d", line)
			if first && t[0] == '[' {
				// Every row of it would be refused, one by one (a
				// pretty-printed array: each of its lines).
				return fmt.Errorf("%s: %s: the file is a JSON array, not JSON Lines: write one JSON object a line (e.g. jq -c '.[]' %s > rows.jsonl)", path, row, path)
			}
			first = false
			ex, field, msg := parseJSONLRow(b, task, own)
			if ex.ID == "" {
				ex.ID = row
			}
			if field == "" {
				field, msg = checkExample(&ex)
			}
			if field != "" {
				if e := bad(&RowError{path, row, field, msg}); e != nil {
					return e
				}
			} else {
				if task.OwnData() {
					for _, k := range unreadKeys(b, task) {
						unread(row, k)
					}
				}
				if err := emit(ex); err != nil {
					return err
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// maxRowBytes bounds a JSON Lines row (a var for tests): a longer line is
// left out as malformed, read to its end without being kept, so that a
// file without line breaks (a JSON array written on one line) is read in
// bounded memory. No model reads a row of this size: 64 MiB of text is
// millions of tokens.
var maxRowBytes = 64 << 20

// readRow reads one line of br, its '\n' included, of at most max bytes; a
// longer one is read to its end and dropped, its length returned as long.
func readRow(br *bufio.Reader, max int) (b []byte, long int64, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long > 0:
			long += int64(len(frag))
		case len(b)+len(frag) > max:
			long, b = int64(len(b)+len(frag)), nil
		default:
			b = append(b, frag...)
		}
		if err != bufio.ErrBufferFull {
			return b, long, err
		}
	}
}

// parseJSONLRow decodes one line; on failure it names the field.
func parseJSONLRow(b []byte, task Task, own *OwnTask) (ex Example, field, msg string) {
	var r jsonlRow
	if !utf8.Valid(b) { // the decoder would make other bytes U+FFFD
		return ex, "(line)", notUTF8(b)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '{' {
		if !json.Valid(t) { // text,label: not "a boolean"
			return ex, "(line)", "want a JSON object, got text that is not JSON: " + clip.Quote(string(t))
		}
		// Valid JSON that is not an object (an array, a string, null) would
		// decode into an empty row without an error.
		return ex, "(line)", "want a JSON object, got " + jsonValueKind(t[0])
	}
	if key, msg := repeatedKey(b); key != "" {
		return ex, key, msg
	}
	if task.OwnData() {
		return parseOwnRow(b, task, own)
	}
	if field, msg = decodeRow(b, &r); field != "" {
		return ex, field, msg
	}
	ex.Task = task
	if ex.ID, msg = rawID(r.ID); msg != "" {
		return ex, "id", msg
	}
	need := func(p *string, name string) (string, bool) {
		if p == nil {
			field, msg = name, "missing"
			return "", false
		}
		return *p, true
	}
	var ok bool
	switch task {
	case SST2:
		if ex.Sentence, ok = need(r.Sentence, "sentence"); !ok {
			return
		}
		if r.Label == nil {
			return ex, "label", "missing"
		}
		ex.Label = *r.Label
		if r.Idx != nil {
			ex.ID = r.Idx.String()
		}
	case SQuAD:
		if ex.Context, ok = need(r.Context, "context"); !ok {
			return
		}
		if ex.Question, ok = need(r.Question, "question"); !ok {
			return
		}
		if ex.Title, ok = need(r.Title, "title"); !ok {
			return
		}
		if r.Answers == nil {
			return ex, "answers", "missing"
		}
		ex.Answers = r.Answers.Text
	case XSum:
		if ex.Document, ok = need(r.Document, "document"); !ok {
			return
		}
		if ex.Summary, ok = need(r.Summary, "summary"); !ok {
			return
		}
	}
	return ex, "", ""
}

// decodeRow decodes the JSON object b into the row struct r; on failure it
// names the field ("(line)" for JSON that does not parse).
func decodeRow(b []byte, r any) (field, msg string) {
	if err := json.Unmarshal(b, r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return te.Field, fmt.Sprintf("want %s, got JSON %s", JSONKind(te.Type), te.Value)
		}
		return "(line)", "not a JSON object: " + err.Error()
	}
	return "", ""
}

// jsonValueKind names the JSON value that starts with the byte c, for
// messages.
func jsonValueKind(c byte) string {
	if kind := map[byte]string{'{': "an object", '[': "an array", '"': "a string", 'n': "null", 't': "a boolean", 'f': "a boolean"}[c]; kind != "" {
		return kind
	}
	return "a number or not JSON"
}

// rawID turns a JSON string or number id into text ("" if absent or
// null); any other JSON is msg, for the row's error: an id that cannot name
// the row would leave its prediction without the name the user gave it.
func rawID(raw json.RawMessage) (id, msg string) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "", ""
	}
	var s string
	if json.Unmarshal(t, &s) == nil {
		return s, ""
	}
	// A JSON number names the row by its text, whatever its size (1e400
	// is valid JSON, out of float64's range: ParseFloat's ErrRange).
	if _, err := strconv.ParseFloat(string(t), 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return string(t), ""
	}
	return "", "want a string or a number, got " + jsonValueKind(t[0])
}

// repeatedKey returns a key the JSON object b gives twice, and why that is
// refused ("" if none, or if b is not an object: the decoder reports that).
// encoding/json would keep the last value without a word; it also matches a
// key to a row field without regard to case, so "Prompt" beside "prompt"
// is the prompt given twice.
func repeatedKey(b []byte) (key, msg string) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	seen := map[string]string{} // the field a key fills (or the key) -> the key as written
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return "", ""
		}
		field := rowField(key)
		if prev, twice := seen[field]; twice {
			if prev != key {
				return key, fmt.Sprintf("given twice in the row, also as %q (a key names a field whatever its case): which value is meant cannot be told", prev)
			}
			return key, "given twice in the row: which value is meant cannot be told"
		}
		seen[field] = key
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", ""
		}
	}
	return "", ""
}

// rowFields are the keys of the JSON Lines rows (jsonlRow's and ownRow's).
var rowFields = append(jsonKeys(jsonlRow{}), jsonKeys(ownRow{})...)

// rowField is the row field that encoding/json fills from key (matched
// without regard to case), or key itself if it fills none.
func rowField(key string) string {
	for _, f := range rowFields {
		if strings.EqualFold(key, f) {
			return f
		}
	}
	return key
}

// jsonKeys are the JSON keys of a struct's fields (their json tags).
func jsonKeys(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}
