package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// squadArticle is one element of the official file's "data" array. Its
// texts and questions stay raw until they are checked one at a time
// (squadText, squadQA), so that a malformed question, even one that is not
// UTF-8, is skipped alone, not with its whole article.
type squadArticle struct {
	Title      json.RawMessage `json:"title"`
	Paragraphs []struct {
		Context json.RawMessage   `json:"context"`
		QAs     []json.RawMessage `json:"qas"`
	} `json:"paragraphs"`
}

// squadQA is one question. Pointers tell a null answer from an empty one.
type squadQA struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Answers  []struct {
		Text *string `json:"text"`
	} `json:"answers"`
}

// readSquadJSON streams the official SQuAD v1.1 JSON ({"data": [article...],
// "version": ...}) one article at a time, so memory stays near one article
// whatever the file size. Questions come in file order, which is also the
// order of the HF hub's rows. The file must be one JSON object and nothing
// after it: a truncated file is an error, not fewer questions.
func readSquadJSON(path string, emit func(Example) error, bad func(*RowError) error) error {
	f, err := openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br, bom, err := textReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(br)
	syntax := func(err error) error {
		return fmt.Errorf("%s: byte %d: not official SQuAD JSON: %w", path, bom+dec.InputOffset(), err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return syntax(err)
	}
	sawData := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		if key, _ := tok.(string); key != "data" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return syntax(err)
			}
			continue
		}
		if sawData {
			return syntax(errors.New(`"data" given twice`))
		}
		sawData = true
		if err := expectDelim(dec, '['); err != nil {
			return syntax(err)
		}
		for a := 0; dec.More(); a++ {
			var art squadArticle
			if err := dec.Decode(&art); err != nil {
				var te *json.UnmarshalTypeError
				if !errors.As(err, &te) {
					return syntax(err)
				}
				// The decoder has consumed the whole article: skip it.
				if e := bad(&RowError{path, fmt.Sprintf("data[%d]", a), jsonField(err, "(article)"), jsonMessage(err)}); e != nil {
					return e
				}
				continue
			}
			if err := emitArticle(path, a, &art, emit, bad); err != nil {
				return err
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return syntax(err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return syntax(errors.New("more data after the end of the JSON object"))
	}
	if !sawData {
		return fmt.Errorf("%s: field \"data\" is missing: not official SQuAD JSON", path)
	}
	return nil
}

func emitArticle(path string, a int, art *squadArticle, emit func(Example) error, bad func(*RowError) error) error {
	title, msg := squadText(art.Title)
	if msg != "" {
		return bad(&RowError{path, fmt.Sprintf("data[%d]", a), "title", msg})
	}
	for p, par := range art.Paragraphs {
		context, msg := squadText(par.Context)
		if msg != "" {
			if e := bad(&RowError{path, fmt.Sprintf("data[%d].paragraphs[%d]", a, p), "context", msg}); e != nil {
				return e
			}
			continue
		}
		for q, raw := range par.QAs {
			place := fmt.Sprintf("data[%d].paragraphs[%d].qas[%d]", a, p, q)
			row := place
			var qa squadQA
			field, msg := "", ""
			if !utf8.Valid(raw) { // the decoder would make other bytes U+FFFD
				field, msg = "(question)", notUTF8(raw)
			} else if err := json.Unmarshal(raw, &qa); err != nil {
				field, msg = jsonField(err, "(question)"), jsonMessage(err)
			} else if qa.ID != "" {
				row += fmt.Sprintf(" (id %q)", qa.ID)
			}
			ex := Example{Task: SQuAD, ID: qa.ID, Title: title, Context: context, Question: qa.Question}
			if ex.ID == "" { // named by its place, so that its prediction can be traced
				ex.ID = place
			}
			for i, ans := range qa.Answers {
				if field != "" {
					break
				}
				if ans.Text == nil {
					field, msg = fmt.Sprintf("answers[%d].text", i), "null or missing"
					break
				}
				ex.Answers = append(ex.Answers, *ans.Text)
			}
			if field == "" {
				field, msg = checkExample(&ex)
			}
			if field != "" {
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
	return nil
}

// squadText reads an article's title or a paragraph's context, kept raw:
// a JSON string of UTF-8 text (absent or null: empty, as Go's decoder reads
// them into a string).
func squadText(raw json.RawMessage) (text, msg string) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	if !utf8.Valid(raw) {
		return "", notUTF8(raw)
	}
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", jsonMessage(err)
	}
	return text, ""
}

// jsonField and jsonMessage describe a json.Unmarshal error for a RowError:
// the field of a type error (whole, if it names none), and what was wanted.
func jsonField(err error, whole string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	return whole
}

func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got JSON %s", JSONKind(te.Type), te.Value)
	}
	return err.Error()
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}
