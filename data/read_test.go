package data

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/meazo-go/meazo/internal/fixture"
)

func TestReadSharedData(t *testing.T) {
	dir := fixture.Dir(t)
	for _, c := range []struct {
		path  string
		task  Task
		count int
		first func(Example) bool
	}{
		{"data/sst2/train.tsv", SST2, 67349, func(e Example) bool {
			return e.Label == 0 && e.Sentence == "hide new secretions from the parental units "
		}},
		{"data/sst2/dev.tsv", SST2, 872, func(e Example) bool {
			return e.Label == 1 && e.Sentence == "it 's a charming and often affecting journey . "
		}},
		{"data/squad/dev-v1.1.json", SQuAD, 10570, func(e Example) bool {
			return e.ID == "56be4db0acb8001400a502ec" && e.Title == "Super_Bowl_50" && len(e.Answers) == 3 && e.Answers[0] == "Denver Broncos"
		}},
		{"data/squad/train-v1.1-subset.json", SQuAD, 11877, nil},
		{"data/xsum/test_subset.jsonl", XSum, 1000, func(e Example) bool { return e.ID == "31690289" && strings.HasPrefix(e.Summary, "A new picture") }},
		{"data/xsum/validation_subset.jsonl", XSum, 1000, nil},
	} {
		var skipped []*RowError
		exs, st, err := ReadAll(filepath.Join(dir, c.path), c.task, ReadOptions{Strict: true, OnSkip: func(e *RowError) { skipped = append(skipped, e) }})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if len(exs) != c.count || st.Skipped != 0 {
			t.Errorf("%s: %d examples (%d skipped), want %d", c.path, len(exs), st.Skipped, c.count)
		}
		if c.first != nil && !c.first(exs[0]) {
			t.Errorf("%s: first example %+v is not the file's first row", c.path, exs[0])
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMalformedRows(t *testing.T) {
	for _, c := range []struct {
		name, content string
		task          Task
		good          int
		wantErr       string // the first row error, strict mode
	}{
		{"a.tsv", "sentence\tlabel\ngood one \t1\nbad one\tx\nno label\n", SST2, 1, `line 3: field "label": not an integer: "x"`},
		{"a.tsv", "sentence\tlabel\nok\t1\nthree\t1\textra\n", SST2, 1, `line 3: field "sentence": want 2 tab-separated columns`},
		{"a.tsv", "sentence\tlabel\nok\t7\n", SST2, 0, `line 2: field "label": want 0 or 1, got 7`},
		{"x.jsonl", `{"id":"1","document":"d","summary":"s"}` + "\n" + `{"id":"2","document":"d"}` + "\n", XSum, 1, `line 2: field "summary": missing`},
		{"x.jsonl", `{"id":"1","document":5,"summary":"s"}` + "\n", XSum, 0, `line 1: field "document": want a string, got JSON number`},
		{"x.jsonl", `{"id":"1","document":"d","summary":"s"}` + "\n[1, 2]\n", XSum, 1, `line 2: want a JSON object, got an array`},
		{"x.jsonl", "null\n" + `{"id":"1","document":"d","summary":"s"}` + "\n", XSum, 1, `line 1: want a JSON object, got null`},
		{"s.jsonl", `"just a string"` + "\n", SST2, 0, `line 1: want a JSON object, got a string`},
		{"a.tsv", "sentence\tlabel\nok\t1\nbad\t" + strings.Repeat("9x", 50000) + "\n", SST2, 1, `line 3: field "label": not an integer: "9x9x`},
		{"s.jsonl", `{"id":"q","title":"T","context":"C","question":"Q","answers":{"text":[],"answer_start":[]}}`, SQuAD, 0, `line 1: field "answers": no answer`},
		// An id that is not a string or a number cannot name the row.
		{"x.jsonl", `{"id":"x1","document":"d","summary":"s"}` + "\n" + `{"id":{"n":2},"document":"d","summary":"s"}` + "\n", XSum, 1, `line 2: field "id": want a string or a number, got an object`},
		{"g.jsonl", `{"id":true,"prompt":"p","completion":"c"}` + "\n" + `{"id":null,"prompt":"p","completion":"c"}` + "\n" + `{"id":7,"prompt":"p","completion":"c"}` + "\n",
			Generation, 2, `line 1: field "id": want a string or a number, got a boolean`},
		// A blank answer would score an empty generation as right.
		{"s.jsonl", `{"id":"q","title":"T","context":"C","question":"Q","answers":{"text":["A"]}}` + "\n" + `{"id":"r","title":"T","context":"C","question":"Q","answers":{"text":["A"," "]}}`,
			SQuAD, 1, `line 2: field "answers": answer 1 is blank`},
		{"d.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":""}]},{"id":"q2","question":"Q","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, 1, `data[0].paragraphs[0].qas[0] (id "q1"): field "answers": answer 0 is blank`},
		{"d.json", `{"version":"1.1","data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":"A","answer_start":0}]},{"id":"q2","question":"","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, 1, `data[0].paragraphs[0].qas[1] (id "q2"): field "question": empty`},
		{"d.json", `{"version":"1.1","data":[{"title":3,"paragraphs":[]}, {"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, 1, `data[0]: field "title": want a string, got JSON number`},
		// One bad answer skips its question, not its article's other questions.
		{"d.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":"A"}]},{"id":"q2","question":"Q","answers":[{"text":7}]},{"id":"q3","question":"Q","answers":[{"text":null}]}]}]}]}`,
			SQuAD, 1, `data[0].paragraphs[0].qas[1]: field "answers.text": want a string, got JSON number`},
		{"d.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q3","question":"Q","answers":[{"text":null}]},{"id":"q1","question":"Q","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, 1, `data[0].paragraphs[0].qas[0] (id "q3"): field "answers[0].text": null or missing`},
		{"d.json", `{"data":[{"title":"caf` + "\xe9" + `","paragraphs":[]},{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, 1, `data[0]: field "title": not UTF-8 text`},
		// A question that is not UTF-8 is skipped alone.
		{"d.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q0","question":"caf` + "\xe9" + `","answers":[{"text":"A"}]},{"id":"q1","question":"Q","answers":[{"text":"A"}]},{"id":"q2","question":"Q","answers":[{"text":"B"}]}]}]}]}`,
			SQuAD, 2, `data[0].paragraphs[0].qas[0]: not UTF-8 text`},
		{"a.tsv", "sentence\tlabel\nok\t1\ncaf\xe9\t1\n", SST2, 1, `line 3: not UTF-8 text`},
		{"x.jsonl", `{"id":"1","document":"d","summary":"s"}` + "\n" + `{"id":"2","document":"caf` + "\xe9" + `","summary":"s"}` + "\n", XSum, 1, `line 2: not UTF-8 text`},
		{"a.tsv", "sentence\tlabel\tidx\nok\t1\t1\nshort\t1\n", SST2, 1, `line 3: field "sentence": want 3 tab-separated columns, got 2`},
	} {
		p := writeFile(t, c.name, c.content)
		var skipped []*RowError
		exs, st, err := ReadAll(p, c.task, ReadOptions{OnSkip: func(e *RowError) { skipped = append(skipped, e) }})
		if err != nil {
			t.Errorf("%s lenient: %v", c.content, err)
			continue
		}
		if len(exs) != c.good || st.Skipped == 0 || len(skipped) != st.Skipped {
			t.Errorf("%q lenient: %d good, %d skipped; want %d good and the bad ones skipped", c.content, len(exs), st.Skipped, c.good)
		}
		_, _, err = ReadAll(p, c.task, ReadOptions{Strict: true})
		if err == nil || !strings.Contains(err.Error(), p+": "+c.wantErr) {
			t.Errorf("strict error = %v, want it to contain %q", err, p+": "+c.wantErr)
		}
	}
}

func TestLimitAndFormats(t *testing.T) {
	p := writeFile(t, "a.tsv", "sentence\tlabel\na\t1\nb\t0\nc\t1\n")
	exs, _, err := ReadAll(p, SST2, ReadOptions{Limit: 2})
	if err != nil || len(exs) != 2 || exs[1].Sentence != "b" || exs[1].ID != "1" {
		t.Errorf("Limit 2: %+v, %v", exs, err)
	}
	if _, _, err := ReadAll(p, SQuAD, ReadOptions{}); err == nil {
		t.Error("TSV for SQuAD accepted")
	}
	if _, _, err := ReadAll(writeFile(t, "a.csv", ""), SST2, ReadOptions{}); err == nil {
		t.Error(".csv accepted")
	}
	if _, _, err := ReadAll(writeFile(t, "bad.json", `{"data": [`), SQuAD, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("truncated SQuAD JSON: %v", err)
	}
}

// The HF hub's Parquet schemas, as pyarrow writes them (nullable columns,
// answers as a struct of two lists).
type hubSST2 struct {
	Idx      int32   `parquet:"idx"`
	Sentence *string `parquet:"sentence,optional"`
	Label    int64   `parquet:"label"`
}

type hubSquad struct {
	ID       string `parquet:"id,optional"`
	Title    string `parquet:"title,optional"`
	Context  string `parquet:"context,optional"`
	Question string `parquet:"question,optional"`
	Answers  struct {
		Text        []string `parquet:"text,list"`
		AnswerStart []int32  `parquet:"answer_start,list"`
	} `parquet:"answers"`
}

type hubXSum struct {
	Document string `parquet:"document,optional"`
	Summary  string `parquet:"summary,optional"`
	ID       string `parquet:"id,optional"`
}

func writeParquet[T any](t *testing.T, rows []T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "train-00000-of-00001.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestReadParquet(t *testing.T) {
	sst := writeParquet(t, []hubSST2{{0, ptr("hide new secretions "), 0}, {1, nil, 1}, {2, ptr("great fun "), 1}, {3, ptr("x"), -1}})
	var skipped []string
	exs, st, err := ReadAll(sst, SST2, ReadOptions{OnSkip: func(e *RowError) { skipped = append(skipped, e.Error()) }})
	if err != nil || len(exs) != 2 || st.Skipped != 2 {
		t.Fatalf("sst2 parquet: %+v %+v %v", exs, st, err)
	}
	if !reflect.DeepEqual(exs[1], Example{Task: SST2, ID: "2", Sentence: "great fun ", Label: 1}) {
		t.Errorf("sst2 row = %+v", exs[1])
	}
	if !strings.Contains(skipped[0], `row 1: field "sentence": null or missing`) || !strings.Contains(skipped[1], `row 3: field "label": want 0 or 1, got -1`) {
		t.Errorf("skipped = %q", skipped)
	}

	sq := hubSquad{ID: "q1", Title: "T", Context: "ctx", Question: "Q?"}
	sq.Answers.Text, sq.Answers.AnswerStart = []string{"a1", "a2"}, []int32{0, 1}
	empty := hubSquad{ID: "q2", Title: "T", Context: "ctx", Question: "Q2?"}
	exs, st, err = ReadAll(writeParquet(t, []hubSquad{sq, empty}), SQuAD, ReadOptions{})
	if err != nil || len(exs) != 1 || st.Skipped != 1 {
		t.Fatalf("squad parquet: %+v %+v %v", exs, st, err)
	}
	if e := exs[0]; e.ID != "q1" || e.Title != "T" || e.Context != "ctx" || e.Question != "Q?" || strings.Join(e.Answers, "|") != "a1|a2" {
		t.Errorf("squad row = %+v", e)
	}

	exs, _, err = ReadAll(writeParquet(t, []hubXSum{{"doc", "sum", "7"}}), XSum, ReadOptions{Strict: true})
	if err != nil || len(exs) != 1 || !reflect.DeepEqual(exs[0], Example{Task: XSum, ID: "7", Document: "doc", Summary: "sum"}) {
		t.Errorf("xsum parquet: %+v %v", exs, err)
	}
	// pandas writes XSum's ids as integers: kept in decimal. Integers where
	// text is wanted, or bytes that are not UTF-8, are a row error, not a panic.
	type xsumIntID struct {
		Document string `parquet:"document"`
		Summary  string `parquet:"summary"`
		ID       int64  `parquet:"id"`
	}
	exs, _, err = ReadAll(writeParquet(t, []xsumIntID{{"doc", "sum", 29750031}}), XSum, ReadOptions{Strict: true})
	if err != nil || len(exs) != 1 || exs[0].ID != "29750031" {
		t.Errorf("xsum parquet with integer ids: %+v %v", exs, err)
	}
	type sstIntSentence struct {
		Sentence int64 `parquet:"sentence"`
		Label    int64 `parquet:"label"`
	}
	_, _, err = ReadAll(writeParquet(t, []sstIntSentence{{5, 1}}), SST2, ReadOptions{Strict: true})
	if err == nil || !strings.Contains(err.Error(), `field "sentence": want text, got INT64`) {
		t.Errorf("integer sentence: %v", err)
	}
	_, _, err = ReadAll(writeParquet(t, []hubXSum{{"caf\xe9", "sum", "7"}}), XSum, ReadOptions{Strict: true})
	if err == nil || !strings.Contains(err.Error(), `field "document": not UTF-8 text`) {
		t.Errorf("Latin-1 document: %v", err)
	}
	// The wrong schema names the missing column.
	_, _, err = ReadAll(writeParquet(t, []hubXSum{{"doc", "sum", "7"}}), SQuAD, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), `column "title" is missing`) {
		t.Errorf("wrong schema: %v", err)
	}
}

// TestHugeRowsAreClipped: an error about a multi-megabyte row names it
// without echoing it.
func TestHugeRowsAreClipped(t *testing.T) {
	huge := strings.Repeat("é", 1<<20)
	for _, c := range []struct{ name, content string }{
		{"h.tsv", huge + "\nx\t1\n"},
		{"l.tsv", "sentence\tlabel\nok\t" + huge + "\n"},
	} {
		p := writeFile(t, c.name, c.content)
		_, _, err := ReadAll(p, SST2, ReadOptions{Strict: true})
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "bytes)") {
			t.Errorf("%s: error of %d bytes: %.300v", c.name, len(fmt.Sprint(err)), err)
		}
	}
}

// TestTSVLongLines: a TSV line past maxRowBytes (a file without line
// breaks, a column of megabytes) is read to its end without being kept: a
// malformed row that the next rows survive, and a header that long is an
// error, not a header held in memory.
func TestTSVLongLines(t *testing.T) {
	defer func(m int) { maxRowBytes = m }(maxRowBytes)
	maxRowBytes = 100
	long := "x" + strings.Repeat("y", 100000) + "\t1" // past the reader's 64 KiB buffer too
	p := writeFile(t, "long.tsv", "sentence\tlabel\na\t1\n"+long+"\r\nb\t0")
	var skipped []*RowError
	exs, st, err := ReadAll(p, SST2, ReadOptions{OnSkip: func(e *RowError) { skipped = append(skipped, e) }})
	want := fmt.Sprintf("%s: line 3: %d bytes, past a row's limit of 100 bytes (is the file one row a line?)", p, len(long)+2)
	if err != nil || len(exs) != 2 || exs[0].Sentence != "a" || exs[1].Sentence != "b" || exs[1].Label != 0 || st.Skipped != 1 ||
		len(skipped) != 1 || skipped[0].Error() != want {
		t.Errorf("a long row: %+v, %+v, %v, skipped %v; want %s", exs, st, err, skipped, want)
	}
	_, _, err = ReadAll(p, SST2, ReadOptions{Strict: true})
	if err == nil || err.Error() != want {
		t.Errorf("a long row, strict: %v, want %s", err, want)
	}
	p = writeFile(t, "header.tsv", long+"\nok\t1\n")
	_, _, err = ReadAll(p, SST2, ReadOptions{})
	if want := fmt.Sprintf("%s: line 1: reading the header: %d bytes, past a line's limit of 100 bytes", p, len(long)+1); err == nil || err.Error() != want {
		t.Errorf("a long header: %v, want %s", err, want)
	}
}

// TestTextFormatsEdges: a UTF-8 byte-order mark is skipped; an official
// SQuAD file that is cut short, has data after its end, or gives "data"
// twice is an error, not fewer or more questions.
// TestNamedTwice: a column or key named twice is refused, not read as
// whichever came last.
func TestNamedTwice(t *testing.T) {
	for _, c := range []struct {
		name, content, want string
		task                Task
	}{
		{"a.tsv", "sentence\tlabel\tlabel\nok\t1\t0\n", `the header names column "label" twice (columns 2 and 3)`, SST2},
		{"b.tsv", "sentence\tlabel\tsentence\na\t1\tb\n", `column "sentence" twice (columns 1 and 3)`, SST2},
		{"c.jsonl", `{"sentence":"ok","label":1,"label":0}` + "\n", `line 1: field "label": given twice`, SST2},
		{"d.jsonl", `{"document":"d","summary":"a","id":"1","summary":"b"}` + "\n", `field "summary": given twice`, XSum},
		// encoding/json fills a field from a key in any case: the last would win.
		{"f.jsonl", `{"prompt":"a","completion":"b","Prompt":"c"}` + "\n", `line 1: field "Prompt": given twice in the row, also as "prompt"`, Generation},
		{"g.jsonl", `{"document":"d","SUMMARY":"a","summary":"b"}` + "\n", `field "summary": given twice in the row, also as "SUMMARY"`, XSum},
	} {
		_, _, err := ReadAll(writeFile(t, c.name, c.content), c.task, ReadOptions{Strict: true})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
	// Keys that differ in case but fill no field are not the same key.
	exs, _, err := ReadAll(writeFile(t, "h.jsonl", `{"sentence":"ok","label":1,"note":"x","Note":"y"}`+"\n"), SST2, ReadOptions{Strict: true})
	if err != nil || len(exs) != 1 {
		t.Errorf("keys of no field in two cases: %v", err)
	}
	// A key nested in a value may repeat another level's name.
	exs, _, err = ReadAll(writeFile(t, "e.jsonl", `{"sentence":"ok","label":1,"meta":{"label":"x"}}`+"\n"), SST2, ReadOptions{Strict: true})
	if err != nil || len(exs) != 1 {
		t.Errorf("a nested key named as a top-level one: %v", err)
	}
}

func TestTextFormatsEdges(t *testing.T) {
	const art = `{"title":"T","paragraphs":[{"context":"Paris is in France.","qas":[{"id":"q1","question":"Where?","answers":[{"text":"France"}]}]}]}`
	bom := "\xef\xbb\xbf"
	for _, c := range []struct {
		name, content string
		task          Task
		good          int
	}{
		{"b.tsv", bom + "sentence\tlabel\nok\t1\n", SST2, 1},
		{"b.jsonl", bom + `{"sentence":"ok","label":1}` + "\n", SST2, 1},
		{"b.json", bom + `{"data":[` + art + `]}`, SQuAD, 1},
	} {
		exs, st, err := ReadAll(writeFile(t, c.name, c.content), c.task, ReadOptions{Strict: true})
		if err != nil || len(exs) != c.good || st.Skipped != 0 {
			t.Errorf("%s with a BOM: %d examples, %+v, %v", c.name, len(exs), st, err)
		}
	}
	for _, c := range []struct{ content, want string }{
		{`{"version":"1.1","data":[` + art + `,` + art + `]`, "not official SQuAD JSON"},
		{`{"data":[` + art + `]} garbage`, "more data after the end of the JSON object"},
		{`{"data":[` + art + `]}{"data":[]}`, "more data after the end of the JSON object"},
		{`{"data":[` + art + `],"data":[` + art + `]}`, `"data" given twice`},
	} {
		_, _, err := ReadAll(writeFile(t, "d.json", c.content), SQuAD, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s…: %v, want an error with %q", c.content, err, c.want)
		}
	}
}

// A row without an id is named by its place in the file, as a TSV or
// Parquet row is by its number: its prediction and the note that skips it
// for its length would otherwise read "id": "" (several of them alike).
func TestRowsWithoutIDs(t *testing.T) {
	for _, c := range []struct {
		name, content string
		task          Task
		want          []string
	}{
		{"x.jsonl", `{"document":"d","summary":"s"}` + "\n\n" + `{"id":"x2","document":"d","summary":"s"}` + "\n" + `{"id":"","document":"d","summary":"s"}` + "\n",
			XSum, []string{"line 1", "x2", "line 4"}},
		{"s.jsonl", `{"title":"T","context":"C","question":"Q","answers":{"text":["A"]}}` + "\n", SQuAD, []string{"line 1"}},
		{"s.jsonl", `{"sentence":"ok","label":1}` + "\n" + `{"sentence":"ok","label":1,"idx":7}` + "\n", SST2, []string{"line 1", "7"}},
		{"d.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"id":"q1","question":"Q","answers":[{"text":"A"}]},{"question":"Q","answers":[{"text":"A"}]}]}]}]}`,
			SQuAD, []string{"q1", "data[0].paragraphs[0].qas[1]"}},
	} {
		exs, _, err := ReadAll(writeFile(t, c.name, c.content), c.task, ReadOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var ids []string
		for _, ex := range exs {
			ids = append(ids, ex.ID)
		}
		if !reflect.DeepEqual(ids, c.want) {
			t.Errorf("%s (%s): ids %q, want %q", c.name, c.task, ids, c.want)
		}
	}
	// A question without an id is named by its place in a skip too, once.
	_, _, err := ReadAll(writeFile(t, "e.json", `{"data":[{"title":"T","paragraphs":[{"context":"C","qas":[{"question":"","answers":[{"text":"A"}]}]}]}]}`), SQuAD, ReadOptions{Strict: true})
	if err == nil || !strings.HasSuffix(err.Error(), `e.json: data[0].paragraphs[0].qas[0]: field "question": empty`) {
		t.Errorf("a question without an id skipped: %v", err)
	}
}

// TestNotUTF8 says where the first bad byte is and what the file likely is.
func TestNotUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"caf\xe9 au lait", "not UTF-8 text: byte 0xE9 at offset 3 (a Latin-1 or Windows-1252 file? convert it: iconv -f WINDOWS-1252 -t UTF-8 IN > OUT)"},
		{"h\xc3\xa9\xff", "not UTF-8 text: byte 0xFF at offset 3 (a Latin-1 or Windows-1252 file? convert it: iconv -f WINDOWS-1252 -t UTF-8 IN > OUT)"},
		{"ok", "not UTF-8 text"},
	} {
		if got := notUTF8([]byte(c.in)); got != c.want {
			t.Errorf("notUTF8(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	p := writeFile(t, "own.jsonl", "{\"text\":\"caf\xe9\",\"label\":1}\n")
	_, _, err := ReadAll(p, Classification, ReadOptions{Own: &OwnTask{Labels: []string{"a", "b"}}, Strict: true})
	if want := p + `: line 1: not UTF-8 text: byte 0xE9 at offset 12 (a Latin-1`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a Latin-1 row: %v, want %s…", err, want)
	}
}

// A JSON number id out of float64's range is still a number: it names its row.
func TestJSONLHugeNumberID(t *testing.T) {
	if id, msg := rawID([]byte("1e400")); id != "1e400" || msg != "" {
		t.Errorf("rawID(1e400) = %q, %q; want the id 1e400", id, msg)
	}
}
