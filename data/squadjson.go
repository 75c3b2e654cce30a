package data

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// squadArticle is one element of the official file's "data" array.
type squadArticle struct {
	Title      string `json:"title"`
	Paragraphs []struct {
		Context string `json:"context"`
		QAs     []struct {
			ID       string `json:"id"`
			Question string `json:"question"`
			Answers  []struct {
				Text string `json:"text"`
			} `json:"answers"`
		} `json:"qas"`
	} `json:"paragraphs"`
}

// readSquadJSON streams the official SQuAD v1.1 JSON ({"data": [article...],
// "version": ...}) one article at a time, so memory stays near one article
// whatever the file size. Questions come in file order, which is also the
// order of the HF hub's rows.
func readSquadJSON(path string, emit func(Example) error, bad func(*RowError) error) error {
	f, err := openFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	syntax := func(err error) error {
		return fmt.Errorf("%s: byte %d: not official SQuAD JSON: %w", path, dec.InputOffset(), err)
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
				if e := bad(&RowError{path, fmt.Sprintf("data[%d]", a), te.Field,
					fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}); e != nil {
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
	if !sawData {
		return fmt.Errorf("%s: field \"data\" is missing: not official SQuAD JSON", path)
	}
	return nil
}

func emitArticle(path string, a int, art *squadArticle, emit func(Example) error, bad func(*RowError) error) error {
	for p, par := range art.Paragraphs {
		for q, qa := range par.QAs {
			ex := Example{Task: SQuAD, ID: qa.ID, Title: art.Title, Context: par.Context, Question: qa.Question}
			ex.Answers = make([]string, len(qa.Answers))
			for i, ans := range qa.Answers {
				ex.Answers[i] = ans.Text
			}
			if field, msg := checkExample(&ex); field != "" {
				row := fmt.Sprintf("data[%d].paragraphs[%d].qas[%d] (id %q)", a, p, q, qa.ID)
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
