package train

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/suggest"
)

// Checks of the user's own data that a stranger's files need and the
// paper's datasets do not: rows repeated within the train file, validation
// or test rows that are training rows too (a test that measures recall of
// the training data), and a validation split too small to choose the best
// parameters on. Each is a warning: the run goes on as configured.

// smallValidation is the size below which a validation split drawn from
// the train file is said to be small: the best parameters (and early
// stopping) are chosen on its loss, and a handful of examples make that a
// draw of chance.
const smallValidation = 20

// ownInput is the text an example of the user's own data is asked about:
// classification's text, generation's prompt ("" for the paper's tasks).
func ownInput(ex data.Example) string {
	switch ex.Task {
	case data.Classification:
		return strings.TrimSpace(ex.Text)
	case data.Generation:
		return strings.TrimSpace(ex.Prompt)
	}
	return ""
}

// idList names up to three ids, "…" after them when there are more.
func idList(ids []string) string {
	s := strings.Join(ids[:min(3, len(ids))], ", ")
	if len(ids) > 3 {
		s += ", …"
	}
	return s
}

// warnRepeats warns of the examples of the train file (path) whose input an
// earlier one has: trained more often than the others, and, split at random,
// on both sides of the validation split.
func warnRepeats(log io.Writer, path string, exs []data.Example) {
	seen := make(map[string]string, len(exs))
	var repeats []string
	for _, ex := range exs {
		in := ownInput(ex)
		if in == "" {
			continue
		}
		if first, ok := seen[in]; ok {
			repeats = append(repeats, fmt.Sprintf("%s repeats %s", ex.ID, first))
			continue
		}
		seen[in] = ex.ID
	}
	if len(repeats) > 0 {
		fmt.Fprintf(log, "warning: %d of the %d examples of the train file %s repeat an earlier example's %s (%s)\n",
			len(repeats), len(exs), path, inputName(exs[0].Task), idList(repeats))
	}
}

// warnRepeatedIDs warns of the examples of what ("train", "validation",
// "test"; file path) whose id an earlier one has: an "id" given twice in the
// user's file. The log's warnings and the predictions file name examples by
// id, and lines that share one cannot be told apart or joined back to their
// rows.
func warnRepeatedIDs(log io.Writer, what, path string, exs []data.Example) {
	count := make(map[string]int, len(exs))
	var order []string // the repeated ids, in the order of their second use
	n := 0
	for _, ex := range exs {
		count[ex.ID]++
		if count[ex.ID] > 1 {
			n++
			if count[ex.ID] == 2 {
				order = append(order, ex.ID)
			}
		}
	}
	if n == 0 {
		return
	}
	named := make([]string, len(order))
	for i, id := range order {
		named[i] = fmt.Sprintf("%q %d times", id, count[id])
	}
	fmt.Fprintf(log, "warning: %d of the %d %s examples in %s have the id of an earlier example (%s): the log and the predictions file name examples by id, and theirs cannot be told apart; give each row its own \"id\" (or none: its line number is its id)\n",
		n, len(exs), what, path, idList(named))
}

// warnUnreadKeys warns of the keys of path's rows that its task
// (classification, generation) does not read (st.Unread): a mistyped
// "refrences" would leave every reference unscored without a word; a key
// of the user's own is named too, and the run goes on.
func warnUnreadKeys(log io.Writer, path string, task data.Task, st data.ReadStats) {
	if len(st.Unread) == 0 {
		return
	}
	known := data.OwnKeys(task)
	var keys []string
	for _, u := range st.Unread {
		k := fmt.Sprintf("%q (%s, %d %s", u.Key, u.First, u.Rows, map[bool]string{true: "row", false: "rows"}[u.Rows == 1])
		if c := suggest.Closest(strings.ToLower(u.Key), known); c != "" && suggest.Distance(strings.ToLower(u.Key), c) <= 2 {
			k += fmt.Sprintf("; did you mean %q?", c)
		}
		keys = append(keys, k+")")
	}
	if st.MoreUnread > 0 {
		keys = append(keys, fmt.Sprintf("and %d more keys", st.MoreUnread))
	}
	q := make([]string, len(known))
	for i, k := range known {
		q[i] = strconv.Quote(k)
	}
	fmt.Fprintf(log, "warning: %s: keys a %s row does not read, left unused: %s; a %s row reads %s\n",
		path, task, strings.Join(keys, ", "), task, strings.Join(q, ", "))
}

// warnOverlap warns of the examples of what ("test", "validation"; file
// path) whose input is a training example's: their metric measures what
// the model was trained on, not what it learned.
func warnOverlap(log io.Writer, what, path string, exs, train []data.Example) {
	inTrain := make(map[string]bool, len(train))
	for _, ex := range train {
		inTrain[ownInput(ex)] = true
	}
	var shared []string
	for _, ex := range exs {
		if in := ownInput(ex); in != "" && inTrain[in] {
			shared = append(shared, ex.ID)
		}
	}
	if len(shared) > 0 {
		fmt.Fprintf(log, "warning: %d of the %d %s examples in %s have the %s of a training example (%s): on them the %s scores what the model was trained on\n",
			len(shared), len(exs), what, path, inputName(exs[0].Task), idList(shared), map[string]string{"test": "metric", "validation": "loss"}[what])
	}
}

// warnSmallValidation warns when the validation split drawn from the train
// file holds fewer than smallValidation examples.
func warnSmallValidation(log io.Writer, n int, train string) {
	if n < smallValidation {
		fmt.Fprintf(log, "warning: the validation split holds %d examples (held out of %s): the best parameters and early stopping are chosen on their loss; give more data or a task.validation file\n", n, train)
	}
}

// inputName names ownInput's field of task in messages.
func inputName(task data.Task) string {
	if task == data.Generation {
		return "prompt"
	}
	return "text"
}
