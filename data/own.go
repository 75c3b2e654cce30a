package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/suggest"
)

// OwnTask is what a config says of a task on the user's own data
// (classification, generation) that its rows do not: the instruction every
// conversation starts with, and classification's label strings.
type OwnTask struct {
	// Instruction is the system turn of every conversation, where the
	// paper's tasks have their instructions (chat.go); "": the conversation
	// has none (the chat template may still write its own, as Llama-3.x's
	// does).
	Instruction string
	// Labels are classification's classes, by index: the assistant's
	// answer for each. A row's label is one of them or its 0-based index.
	Labels []string
}

// Check reports what makes o unusable for task: classification needs at
// least two distinct labels, none blank; generation takes none. The
// messages name no setting: the caller knows which one the user wrote
// (task.labels, --labels).
func (o *OwnTask) Check(task Task) error {
	switch {
	case task == Generation && len(o.Labels) > 0:
		return fmt.Errorf("task generation has no labels (its answers are the rows' completions), got %d", len(o.Labels))
	case task != Classification:
		return nil
	case len(o.Labels) < 2:
		return fmt.Errorf("task classification needs at least 2 labels, got %d", len(o.Labels))
	}
	for i, l := range o.Labels {
		if strings.TrimSpace(l) == "" {
			return fmt.Errorf("label %d is blank: it would be an empty answer", i)
		}
		if j := slices.Index(o.Labels[:i], l); j >= 0 {
			return fmt.Errorf("label %s is given twice (%d and %d): a row's label would not say which class it is", clip.Quote(l), j, i)
		}
	}
	return nil
}

// checkOwnRead refuses what the readers of the tasks on the user's own data
// cannot read: a format other than JSON Lines (the .tsv, .json and .parquet
// readers know the paper's tasks' columns only), or a classification
// without its labels.
func checkOwnRead(path, ext string, task Task, own *OwnTask) error {
	if ext != ".jsonl" {
		why := fmt.Sprintf("the %s reader knows the paper's tasks' fields only", ext)
		if !slices.Contains([]string{".tsv", ".json", ".parquet"}, ext) { // .csv: no reader at all
			why = fmt.Sprintf("a %s file is not read: convert it", ext)
			if ext == "" {
				why = "the file name has no extension: name it .jsonl"
			}
		}
		return fmt.Errorf("%s: task %s reads JSON Lines (.jsonl) only, one %s object a line (%s)", path, task, rowShape(task), why)
	}
	if own == nil {
		own = &OwnTask{}
	}
	if err := own.Check(task); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// rowShape is a JSON Lines row of task, for messages.
func rowShape(task Task) string {
	if task == Classification {
		return `{"text": …, "label": …}`
	}
	return `{"prompt": …, "completion": …}`
}

// ownRow is a JSON Lines row of a task on the user's own data. Pointers
// tell a missing field from an empty one.
type ownRow struct {
	ID json.RawMessage `json:"id"`
	// Classification: the label is a string (one of the labels) or a number (its index).
	Text  *string         `json:"text"`
	Label json.RawMessage `json:"label"`
	// Generation.
	Prompt     *string  `json:"prompt"`
	Completion *string  `json:"completion"`
	References []string `json:"references"`
}

// UnreadKey is a key of a classification's or a generation's rows that
// the task does not read, counted over a file: a mistyped field
// ("refrences", whose answers would then never score) or the user's own
// metadata, kept in the file and not used.
type UnreadKey struct {
	Key   string
	First string // the first row that has it: "line 6"
	Rows  int    // the rows that have it (those read; malformed ones are not counted)
}

// maxUnreadKeys bounds ReadStats.Unread: a file whose rows each bring keys
// of their own is counted past it, not listed.
const maxUnreadKeys = 8

// noteUnread counts key in row.
func (st *ReadStats) noteUnread(row, key string) {
	for i := range st.Unread {
		if st.Unread[i].Key == key {
			st.Unread[i].Rows++
			return
		}
	}
	if len(st.Unread) < maxUnreadKeys {
		st.Unread = append(st.Unread, UnreadKey{Key: key, First: row, Rows: 1})
	} else {
		st.MoreUnread++
	}
}

// OwnKeys are the keys a row of task (classification or generation) reads.
func OwnKeys(task Task) []string {
	if task == Classification {
		return []string{"id", "text", "label"}
	}
	return []string{"id", "prompt", "completion", "references"}
}

// unreadKeys returns the keys of the JSON object b that a row of task does
// not read. A key is read when it matches one of OwnKeys without regard to
// case, as encoding/json fills a field ("Prompt" is the prompt).
func unreadKeys(b []byte, task Task) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	known := OwnKeys(task)
	var out []string
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return out
		}
		if !slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, key) }) {
			out = append(out, key)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return out
		}
	}
	return out
}

// parseOwnRow decodes one JSON object of a task on the user's own data; on
// failure it names the field. The emptiness of the text, prompt and
// completion is checkExample's.
func parseOwnRow(b []byte, task Task, own *OwnTask) (ex Example, field, msg string) {
	var r ownRow
	if field, msg = decodeRow(b, &r); field != "" {
		return ex, field, msg
	}
	ex = Example{Task: task, Own: own}
	if ex.ID, msg = rawID(r.ID); msg != "" {
		return ex, "id", msg
	}
	var labels []string // Read refuses a classification without them first
	if own != nil {
		labels = own.Labels
	}
	switch task {
	case Classification:
		if r.Text == nil {
			return ex, "text", "missing or null"
		}
		ex.Text = *r.Text
		if ex.Label, msg = ownLabel(r.Label, labels); msg != "" {
			return ex, "label", msg
		}
	case Generation:
		switch {
		case r.Prompt == nil:
			return ex, "prompt", "missing or null"
		case r.Completion == nil:
			return ex, "completion", "missing or null"
		}
		ex.Prompt, ex.Completion = *r.Prompt, *r.Completion
		for i, ref := range r.References {
			if strings.TrimSpace(ref) == "" { // JSON null decodes as ""
				return ex, fmt.Sprintf("references[%d]", i), "empty or null: a blank answer would score as right"
			}
		}
		ex.References = r.References
	}
	return ex, "", ""
}

// ownLabel reads a classification row's label: a JSON string is one of
// labels, a JSON number its 0-based index. A label string that looks like a
// number ("1") is still a string: only the JSON type decides.
func ownLabel(raw json.RawMessage, labels []string) (int, string) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return 0, "missing"
	case t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return 0, "not a JSON string: " + err.Error()
		}
		if i := slices.Index(labels, s); i >= 0 {
			return i, ""
		}
		msg := fmt.Sprintf("%s is not one of the labels (%s)", clip.Quote(s), listLabels(labels))
		if c := suggest.Closest(strings.ToLower(s), labels); c != "" && suggest.Distance(strings.ToLower(s), strings.ToLower(c)) <= 2 {
			msg += fmt.Sprintf(" (did you mean %q?)", c) // a typo, or another case: labels are compared exactly
		}
		return 0, msg
	case t[0] == '-' || t[0] >= '0' && t[0] <= '9':
		i, err := strconv.Atoi(string(t))
		if err != nil {
			return 0, fmt.Sprintf("want a label's 0-based index (a whole number), got %s", clip.Quote(string(t)))
		}
		// Labels that are numbers ([1, 2, 3], star ratings) make a
		// number in a row ambiguous: read as an index, 1 would be "2",
		// and every row would train on its neighbour's class.
		named := slices.Index(labels, string(t))
		if i < 0 || i >= len(labels) {
			msg := fmt.Sprintf("index %d is not one of the %d labels' (0 to %d)", i, len(labels), len(labels)-1)
			if named >= 0 {
				msg += fmt.Sprintf(", but %q is a label: write it as a string, \"label\": %q (a JSON number is a label's 0-based index)", t, t)
			}
			return 0, msg
		}
		if named >= 0 && named != i {
			return 0, fmt.Sprintf("%d is ambiguous: as a 0-based index it is the label %s, but %q is a label too (index %d): write the label as a string, \"label\": %q (a JSON number is a label's 0-based index)",
				i, clip.Quote(labels[i]), t, named, t)
		}
		return i, ""
	}
	return 0, fmt.Sprintf("want one of the labels (a string) or its 0-based index, got %s", jsonValueKind(t[0]))
}

// listLabels quotes the first labels, for messages.
func listLabels(labels []string) string {
	const shown = 6
	var q []string
	for _, l := range labels[:min(len(labels), shown)] {
		q = append(q, clip.Quote(l))
	}
	if len(labels) > shown {
		q = append(q, fmt.Sprintf("… %d in all", len(labels)))
	}
	return strings.Join(q, ", ")
}
