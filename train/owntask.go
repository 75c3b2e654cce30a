package train

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/meazo-go/meazo/data"
)

// The tasks on the user's own data (task.name classification and
// generation): what the config says of them beyond the paper's tasks'
// keys, task.labels and task.instruction.

// own is the config's part of a task on the user's own data, which its
// examples carry (nil for the paper's tasks).
func (c *Config) own() *data.OwnTask {
	return ownTask(data.Task(c.Task.Name), c.Task.Labels, c.Task.Instruction)
}

// ownTask is the OwnTask of task (nil for the paper's tasks).
func ownTask(task data.Task, labels []string, instruction string) *data.OwnTask {
	if !task.OwnData() {
		return nil
	}
	return &data.OwnTask{Labels: labels, Instruction: instruction}
}

// validateOwnTask checks task.labels and task.instruction. On the paper's
// tasks they are refused, not noted as unread (ignoredsets.go): no shipped
// config or study sets them, so a value there can only mean a user expects
// to change SST-2's label words or a paper task's system prompt, which are
// fixed (data/chat.go), and the run would train something else.
func (c *Config) validateOwnTask() error {
	task := data.Task(c.Task.Name)
	switch {
	case !task.OwnData() && len(c.Task.Labels) > 0:
		return fmt.Errorf("task.labels %v: read only by task.name classification; task %s has its own labels", c.Task.Labels, task)
	case !task.OwnData() && c.Task.Instruction != "":
		return fmt.Errorf("task.instruction %s: read only by task.name classification and generation; task %s has the paper's fixed prompt (data/chat.go)", clipValue(c.Task.Instruction), task)
	case !task.OwnData():
		return nil
	case c.Task.Instruction != "" && strings.TrimSpace(c.Task.Instruction) == "":
		return fmt.Errorf("task.instruction %q is blank: write one, or leave the key out for no system turn", c.Task.Instruction)
	case c.Adapter.Kind == "prompt" && c.Adapter.InitText == "" && c.Task.Instruction == "":
		return fmt.Errorf("adapter.init_text is required for prompt tuning on task %s without a task.instruction (the default, the task's system prompt, is the instruction)", task)
	}
	if err := c.own().Check(task); err != nil {
		return fmt.Errorf("task.labels %v: %w", c.Task.Labels, err)
	}
	return nil
}

// clipValue quotes a config value for a message, cut short when long (an
// instruction may be paragraphs).
func clipValue(s string) string {
	if r := []rune(s); len(r) > 60 {
		return fmt.Sprintf("%q…", string(r[:50]))
	}
	return fmt.Sprintf("%q", s)
}

// ParseLabels reads a command's --labels flag as --set task.labels takes
// it: a YAML list, "[negative, positive]" (a label with a comma or a colon
// quoted: '["yes, surely", no]').
func ParseLabels(s string) ([]string, error) {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("--labels %q: %w", s, err)
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("--labels %q: want a list, e.g. --labels '[negative, positive]'", s)
	}
	out := make([]string, len(l))
	for i, e := range l {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("--labels %q: label %d is %v, not a string (quote it: \"%v\")", s, i, e, e)
		}
	}
	return out, nil
}

// logLabels writes how many examples of a classification's file (what:
// "train", "test") have each label. Of the train file it warns of a label
// without an example (one-class data, a class filtered out by mistake):
// the run never trains the model to answer it. Of the test file it gives
// the most frequent label's share, the accuracy of always answering it,
// against which an unbalanced test's accuracy is read.
func logLabels(log io.Writer, what, path string, exs []data.Example, labels []string) {
	counts := make([]int, len(labels))
	for _, ex := range exs {
		if ex.Label >= 0 && ex.Label < len(labels) {
			counts[ex.Label]++
		}
	}
	var parts, none []string
	top := 0
	for i, l := range labels {
		parts = append(parts, fmt.Sprintf("%s %d", strconv.Quote(l), counts[i]))
		if counts[i] == 0 {
			none = append(none, strconv.Quote(l))
		}
		if counts[i] > counts[top] {
			top = i
		}
	}
	line := fmt.Sprintf("%s labels in %s: %s", what, path, strings.Join(parts, ", "))
	if what == "test" && len(exs) > 0 {
		line += fmt.Sprintf(" (always answering %s scores accuracy %.3f)", strconv.Quote(labels[top]), float64(counts[top])/float64(len(exs)))
	}
	fmt.Fprintln(log, line)
	if what == "train" && len(none) > 0 {
		fmt.Fprintf(log, "warning: task.labels %s: no example in the train file %s, so the model is never trained to answer it\n", strings.Join(none, ", "), path)
	}
}
