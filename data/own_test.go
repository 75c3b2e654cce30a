package data

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

var sentiment = &OwnTask{Labels: []string{"negative", "positive", "neutral"}}

// TestOwnRowErrors: a malformed row of a task on the user's own data is a
// RowError naming the file, the line and the field, skipped unless strict.
func TestOwnRowErrors(t *testing.T) {
	good := `{"text":"fine","label":"positive"}` + "\n"
	gen := `{"prompt":"p","completion":"c"}` + "\n"
	for _, c := range []struct {
		name    string
		task    Task
		row     string // the second line, after a good one
		wantErr string // the strict error after the file's name
	}{
		{"text missing", Classification, `{"label":"positive"}`, `line 2: field "text": missing`},
		{"text null", Classification, `{"text":null,"label":"positive"}`, `line 2: field "text": missing or null`},
		{"text empty", Classification, `{"text":"  ","label":1}`, `line 2: field "text": empty`},
		{"text a number", Classification, `{"text":5,"label":1}`, `line 2: field "text": want a string, got JSON number`},
		{"label missing", Classification, `{"text":"t"}`, `line 2: field "label": missing`},
		{"label unknown", Classification, `{"text":"t","label":"Positive"}`, `line 2: field "label": "Positive" is not one of the labels ("negative", "positive", "neutral") (did you mean "positive"?)`},
		{"label typo", Classification, `{"text":"t","label":"positiv"}`, `"positiv" is not one of the labels ("negative", "positive", "neutral") (did you mean "positive"?)`},
		{"label far from any", Classification, `{"text":"t","label":"great"}`, `"great" is not one of the labels ("negative", "positive", "neutral")`},
		{"index too large", Classification, `{"text":"t","label":3}`, `line 2: field "label": index 3 is not one of the 3 labels' (0 to 2)`},
		{"index negative", Classification, `{"text":"t","label":-1}`, `line 2: field "label": index -1 is not one of the 3 labels'`},
		{"index not whole", Classification, `{"text":"t","label":1.5}`, `line 2: field "label": want a label's 0-based index (a whole number), got "1.5"`},
		{"label a boolean", Classification, `{"text":"t","label":true}`, `line 2: field "label": want one of the labels (a string) or its 0-based index, got a boolean`},
		{"label null", Classification, `{"text":"t","label":null}`, `got null`},
		{"label a list", Classification, `{"text":"t","label":["positive"]}`, `got an array`},
		{"label twice", Classification, `{"text":"t","label":0,"label":1}`, `line 2: field "label": given twice in the row`},
		{"not an object", Classification, `["t", 1]`, `line 2: want a JSON object, got an array`},
		{"not UTF-8", Classification, "{\"text\":\"caf\xe9\",\"label\":1}", `line 2: not UTF-8 text`},
		{"not JSON", Classification, `{"text":"t",`, `line 2: not a JSON object`},
		{"prompt missing", Generation, `{"completion":"c"}`, `line 2: field "prompt": missing`},
		{"prompt empty", Generation, `{"prompt":"","completion":"c"}`, `line 2: field "prompt": empty`},
		{"completion missing", Generation, `{"prompt":"p"}`, `line 2: field "completion": missing`},
		{"completion blank", Generation, `{"prompt":"p","completion":" \n"}`, `line 2: field "completion": empty`},
		{"references a string", Generation, `{"prompt":"p","completion":"c","references":"r"}`, `line 2: field "references": want a list, got JSON string`},
		{"reference a number", Generation, `{"prompt":"p","completion":"c","references":["r",7]}`, `line 2: field "references": want a string, got JSON number`},
		{"reference empty", Generation, `{"prompt":"p","completion":"c","references":["r",""]}`, `line 2: field "references[1]": empty or null`},
		{"reference null", Generation, `{"prompt":"p","completion":"c","references":[null]}`, `line 2: field "references[0]": empty or null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, own := good, sentiment
			if c.task == Generation {
				first, own = gen, nil
			}
			p := writeFile(t, "own.jsonl", first+c.row+"\n")
			var skipped []*RowError
			exs, st, err := ReadAll(p, c.task, ReadOptions{Own: own, OnSkip: func(e *RowError) { skipped = append(skipped, e) }})
			if err != nil || len(exs) != 1 || st.Skipped != 1 || len(skipped) != 1 {
				t.Fatalf("lenient: %d examples, %d skipped, %v; want the good row and the bad one skipped", len(exs), st.Skipped, err)
			}
			_, _, err = ReadAll(p, c.task, ReadOptions{Own: own, Strict: true})
			if err == nil || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("strict error = %v, want %s: …%s", err, p, c.wantErr)
			}
		})
	}
}

// TestOwnNumberLabels: labels that are numbers (star ratings) make a JSON
// number in a row ambiguous; read as an index, each rating 1 would train as
// "2". Such a number is refused, saying to write the label as a string,
// unless the label it names is at that index.
func TestOwnNumberLabels(t *testing.T) {
	stars := &OwnTask{Labels: []string{"1", "2", "3"}}
	for _, c := range []struct {
		row, want string // want: the error after the file's name, or "" and the label index in wantLabel
		wantLabel int
	}{
		{`{"text":"t","label":"1"}`, "", 0},
		{`{"text":"t","label":"3"}`, "", 2},
		{`{"text":"t","label":1}`, `line 1: field "label": 1 is ambiguous: as a 0-based index it is the label "2", but "1" is a label too (index 0): write the label as a string, "label": "1" (a JSON number is a label's 0-based index)`, 0},
		{`{"text":"t","label":3}`, `line 1: field "label": index 3 is not one of the 3 labels' (0 to 2), but "3" is a label: write it as a string, "label": "3" (a JSON number is a label's 0-based index)`, 0},
		{`{"text":"t","label":0}`, "", 0}, // "0" is no label: the index
	} {
		p := writeFile(t, "stars.jsonl", c.row+"\n")
		exs, _, err := ReadAll(p, Classification, ReadOptions{Own: stars, Strict: true})
		switch {
		case c.want == "" && (err != nil || len(exs) != 1 || exs[0].Label != c.wantLabel):
			t.Errorf("%s: %+v, %v; want label %d", c.row, exs, err, c.wantLabel)
		case c.want != "" && (err == nil || err.Error() != p+": "+c.want):
			t.Errorf("%s: error %v\nwant %s: %s", c.row, err, p, c.want)
		}
	}
	// Numbers that are their own indices are no trap.
	p := writeFile(t, "bits.jsonl", `{"text":"t","label":1}`+"\n")
	exs, _, err := ReadAll(p, Classification, ReadOptions{Own: &OwnTask{Labels: []string{"0", "1"}}, Strict: true})
	if err != nil || len(exs) != 1 || exs[0].Label != 1 {
		t.Errorf("labels [0, 1], a row's 1: %+v, %v; want label 1", exs, err)
	}
}

// TestOwnRows reads good rows: a label by string or index, an id or the
// line, references, the config's part carried by every example.
func TestOwnRows(t *testing.T) {
	own := &OwnTask{Instruction: "Classify.", Labels: sentiment.Labels}
	p := writeFile(t, "c.jsonl", "\xef\xbb\xbf"+`{"text":"a","label":"neutral","id":"x1"}`+"\n\n"+`{"text":"b","label":0,"id":42}`+"\n"+`{"text":"c","label":"positive","extra":1}`+"\n")
	exs, _, err := ReadAll(p, Classification, ReadOptions{Strict: true, Own: own})
	want := []Example{
		{Task: Classification, ID: "x1", Text: "a", Label: 2, Own: own},
		{Task: Classification, ID: "42", Text: "b", Label: 0, Own: own},
		{Task: Classification, ID: "line 4", Text: "c", Label: 1, Own: own},
	}
	if err != nil || !reflect.DeepEqual(exs, want) {
		t.Errorf("classification rows: %+v, %v; want %+v", exs, err, want)
	}
	p = writeFile(t, "g.jsonl", `{"prompt":"Capital of France?","completion":"Paris","references":["paris, France"]}`+"\n"+`{"prompt":"q","completion":"a","references":null}`+"\n")
	exs, _, err = ReadAll(p, Generation, ReadOptions{Strict: true})
	wantG := []Example{
		{Task: Generation, ID: "line 1", Prompt: "Capital of France?", Completion: "Paris", References: []string{"paris, France"}},
		{Task: Generation, ID: "line 2", Prompt: "q", Completion: "a"},
	}
	if err != nil || !reflect.DeepEqual(exs, wantG) {
		t.Errorf("generation rows: %+v, %v; want %+v", exs, err, wantG)
	}
}

// TestOwnUnreadKeys: the keys of a classification's or a generation's rows
// that the task does not read are counted per file with their first row
// (a key matching a read one in another case is read, as encoding/json
// reads it; a malformed row's keys are not counted), up to maxUnreadKeys,
// the others only counted.
func TestOwnUnreadKeys(t *testing.T) {
	p := writeFile(t, "g.jsonl", `{"prompt":"a","completion":"b","refrences":["c"]}`+"\n"+
		`{"Prompt":"d","completion":"e","source":"web","refrences":["f"]}`+"\n"+
		`{"prompt":"","completion":"e","bad":1}`+"\n"+
		`{"id":"q","prompt":"g","completion":"h","references":["i"]}`+"\n")
	exs, st, err := ReadAll(p, Generation, ReadOptions{})
	want := []UnreadKey{{Key: "refrences", First: "line 1", Rows: 2}, {Key: "source", First: "line 2", Rows: 1}}
	if err != nil || len(exs) != 3 || !reflect.DeepEqual(st.Unread, want) || st.MoreUnread != 0 {
		t.Errorf("generation: %d examples, unread %+v (%d more), %v; want 3, %+v", len(exs), st.Unread, st.MoreUnread, err, want)
	}
	var rows strings.Builder
	for i := range maxUnreadKeys + 3 {
		fmt.Fprintf(&rows, `{"text":"t","label":0,"k%d":1,"ID":"%d"}`+"\n", i, i)
	}
	_, st, err = ReadAll(writeFile(t, "c.jsonl", rows.String()), Classification, ReadOptions{Own: sentiment})
	if err != nil || len(st.Unread) != maxUnreadKeys || st.Unread[0] != (UnreadKey{Key: "k0", First: "line 1", Rows: 1}) || st.MoreUnread != 3 {
		t.Errorf("classification: unread %+v (%d more), %v; want %d listed from k0, 3 more", st.Unread, st.MoreUnread, err, maxUnreadKeys)
	}
	_, st, _ = ReadAll(writeFile(t, "ok.jsonl", `{"id":1,"text":"t","label":"positive"}`+"\n"), Classification, ReadOptions{Own: sentiment})
	if st.Unread != nil || st.MoreUnread != 0 {
		t.Errorf("a row of read keys only: unread %+v", st.Unread)
	}
}

// TestOwnFormatsAndLabels: the tasks on the user's own data read JSON Lines
// only, and a classification reads its rows against valid labels only.
func TestOwnFormatsAndLabels(t *testing.T) {
	row := `{"text":"a","label":0}` + "\n"
	for _, c := range []struct {
		name, file string
		task       Task
		own        *OwnTask
		want       string
	}{
		{"tsv", "a.tsv", Classification, sentiment, `task classification reads JSON Lines (.jsonl) only, one {"text": …, "label": …} object a line (the .tsv reader`},
		{"parquet", "a.parquet", Generation, nil, `task generation reads JSON Lines (.jsonl) only, one {"prompt": …, "completion": …} object a line (the .parquet reader`},
		{"json", "a.json", Classification, sentiment, `reads JSON Lines (.jsonl) only`},
		{"csv", "a.csv", Classification, sentiment, `task classification reads JSON Lines (.jsonl) only, one {"text": …, "label": …} object a line (a .csv file is not read: convert it)`},
		{"no extension", "a", Generation, nil, `task generation reads JSON Lines (.jsonl) only, one {"prompt": …, "completion": …} object a line (the file name has no extension: name it .jsonl)`},
		{"no labels", "a.jsonl", Classification, nil, "task classification needs at least 2 labels, got 0"},
		{"one label", "a.jsonl", Classification, &OwnTask{Labels: []string{"x"}}, "needs at least 2 labels, got 1"},
		{"a label twice", "a.jsonl", Classification, &OwnTask{Labels: []string{"x", "y", "x"}}, `label "x" is given twice (0 and 2)`},
		{"a blank label", "a.jsonl", Classification, &OwnTask{Labels: []string{"x", " "}}, "label 1 is blank"},
		{"labels for generation", "a.jsonl", Generation, sentiment, "task generation has no labels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, c.file, row)
			_, _, err := ReadAll(p, c.task, ReadOptions{Own: c.own})
			if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %s: %s", err, p, c.want)
			}
		})
	}
}

// TestOwnConversation: the instruction is the system turn, where the paper's
// tasks have theirs, and none without one; the text or prompt is the user
// turn and the label or completion the assistant's, supervised with its
// end of turn.
func TestOwnConversation(t *testing.T) {
	enc := &Encoder{Tok: fakeTok{}}
	withInstruction := &OwnTask{Instruction: "Say the sentiment.", Labels: []string{"bad", "good"}}
	for _, c := range []struct {
		ex         Example
		wantPrompt string
		target     string
	}{
		{Example{Task: Classification, ID: "1", Text: "fun film", Label: 1, Own: withInstruction},
			"<h>system\nSay the sentiment.<e><h>user\nfun film<e><h>assistant\n", "good"},
		{Example{Task: Classification, ID: "2", Text: "dull", Label: 0, Own: &OwnTask{Labels: []string{"bad", "good"}}},
			"<h>user\ndull<e><h>assistant\n", "bad"},
		{Example{Task: Generation, ID: "3", Prompt: "2+2?", Completion: "4", Own: &OwnTask{Instruction: "Add."}},
			"<h>system\nAdd.<e><h>user\n2+2?<e><h>assistant\n", "4"},
		{Example{Task: Generation, ID: "4", Prompt: "hi", Completion: "hello there"}, "<h>user\nhi<e><h>assistant\n", "hello there"},
	} {
		text, _, err := enc.EncodePrompt(c.ex)
		if err != nil || text != c.wantPrompt {
			t.Errorf("%s: prompt %q, %v; want %q", c.ex.ID, text, err, c.wantPrompt)
		}
		e, err := enc.Encode(c.ex)
		if err != nil {
			t.Fatal(err)
		}
		start, end := e.Supervised()
		if got := idsText(e.IDs[start : end-1]); got != c.target || e.IDs[end-1] != 1001 || start != e.PromptLen {
			t.Errorf("%s: supervised %q + %d from %d, want %q + <e> from the prompt's end %d", c.ex.ID, got, e.IDs[end-1], start, c.target, e.PromptLen)
		}
	}
	if _, err := enc.Encode(Example{Task: Classification, ID: "5", Text: "t", Label: 2, Own: withInstruction}); err == nil {
		t.Error("label 2 of 2 labels encoded")
	}
}

// TestCandidatesOfLabels: every label of a classification is a candidate,
// scored on the tokens where the candidates differ; a label whose tokens
// begin another's keeps its end of turn to be scored by.
func TestCandidatesOfLabels(t *testing.T) {
	for _, c := range []struct {
		labels []string
		spans  []string // the scored text of each candidate
	}{
		{[]string{"negative", "positive", "neutral"}, []string{"negative", "positive", "neutral"}},
		// What every label ends with is not scored, as what they begin with:
		// here the byte (a token, to fakeTok) "d".
		{[]string{"very good", "very bad", "very very bad"}, []string{"goo", "ba", "very ba"}},
		{[]string{"yes", "yes sir"}, []string{"<e>", " sir<e>"}},
		{[]string{"Sentiment: terrible", "Sentiment: great"}, []string{"terrible", "great"}}, // SST-2's spans
	} {
		ex := Example{Task: Classification, ID: "e", Text: "x", Own: &OwnTask{Labels: c.labels}}
		cs, err := (&Encoder{Tok: fakeTok{}}).Candidates(ex)
		if err != nil {
			t.Fatalf("%q: %v", c.labels, err)
		}
		var got []string
		for i, sp := range cs.Span {
			got = append(got, idsText(cs.Full[i].IDs[sp[0]:sp[1]]))
		}
		if !reflect.DeepEqual(got, c.spans) || !reflect.DeepEqual(cs.Labels, c.labels) {
			t.Errorf("%q: spans %q, want %q", c.labels, got, c.spans)
		}
	}
	if _, err := (&Encoder{Tok: fakeTok{}}).Candidates(Example{Task: Generation, ID: "g"}); err == nil {
		t.Error("a generation example has label candidates")
	}
}

// TestCandidateSpanErrors: renders that cannot be told apart are refused.
func TestCandidateSpanErrors(t *testing.T) {
	enc := func(ids ...int) Encoded { return Encoded{IDs: ids} }
	for _, c := range []struct {
		full []Encoded
		want string
	}{
		{[]Encoded{enc(1, 2, 3), enc(1, 2, 3)}, `the labels "a" and "b" render as the same tokens`},
		{[]Encoded{enc(1, 2), enc(1, 2, 3)}, `the label "a" renders as the beginning of another's`},
		{[]Encoded{enc(1, 2), enc(2, 2)}, "share no prompt"},
	} {
		cs := Candidates{Labels: []string{"a", "b"}, Full: c.full}
		if err := cs.spans(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.full, err, c.want)
		}
	}
}

// idsText is fakeTok's text of ids.
func idsText(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		switch id {
		case 1000:
			b.WriteString("<h>")
		case 1001:
			b.WriteString("<e>")
		default:
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

// TestJSONLFileMistakes: the files users write instead of JSON Lines are
// named as what they are: a JSON array (on one line or pretty-printed) and
// a UTF-16 file stop the read at once, whatever task.strict; a CSV's lines
// are "not JSON", not "a boolean" (text,label); a line past maxRowBytes (a
// file without line breaks) is a malformed row, read without being kept.
func TestJSONLFileMistakes(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"array on one line", `[{"text":"a","label":0}, {"text":"b","label":1}]` + "\n", `line 1: the file is a JSON array, not JSON Lines: write one JSON object a line (e.g. jq -c '.[]' `},
		{"pretty array", "\n[\n  {\n    \"text\": \"a\",\n    \"label\": 0\n  }\n]\n", `line 2: the file is a JSON array, not JSON Lines`},
		{"array of lines", "[\n" + `{"text":"a","label":0},` + "\n" + `{"text":"b","label":1}` + "\n]\n", `line 1: the file is a JSON array`},
		{"UTF-16", "\xff\xfe{\x00\"\x00", `the file is UTF-16 text (its byte-order mark is FF FE; Windows PowerShell's > writes it): save it as UTF-8`},
	} {
		p := writeFile(t, "f.jsonl", c.file)
		for _, strict := range []bool{false, true} {
			_, _, err := ReadAll(p, Classification, ReadOptions{Own: sentiment, Strict: strict})
			if err == nil || !strings.HasPrefix(err.Error(), p+": "+c.want) {
				t.Errorf("%s (strict %v): %v, want %s: %s…", c.name, strict, err, p, c.want)
			}
		}
	}
	p := writeFile(t, "csv.jsonl", "text,label\nwhat a film,1\n")
	_, _, err := ReadAll(p, Classification, ReadOptions{Own: sentiment, Strict: true})
	if want := p + `: line 1: want a JSON object, got text that is not JSON: "text,label"`; err == nil || err.Error() != want {
		t.Errorf("a CSV: %v, want %s", err, want)
	}

	defer func(m int) { maxRowBytes = m }(maxRowBytes)
	maxRowBytes = 100
	long := strings.Repeat(`{"text":"`+strings.Repeat("x", 5000)+`","label":0}`, 20) // 100 KB: more than the reader's 64 KiB buffer
	p = writeFile(t, "long.jsonl", `{"text":"a","label":0}`+"\n"+long+"\n"+`{"text":"b","label":1}`)
	var skipped []*RowError
	exs, st, err := ReadAll(p, Classification, ReadOptions{Own: sentiment, OnSkip: func(e *RowError) { skipped = append(skipped, e) }})
	if err != nil || len(exs) != 2 || exs[0].Text != "a" || exs[1].Text != "b" || exs[1].ID != "line 3" || st.Skipped != 1 ||
		skipped[0].Error() != fmt.Sprintf("%s: line 2: %d bytes, past a row's limit of 100 bytes (is the file one JSON object a line?)", p, len(long)+1) {
		t.Errorf("a long row: %+v, %+v, %v, skipped %v", exs, st, err, skipped)
	}
}
