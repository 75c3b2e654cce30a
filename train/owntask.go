package train

import (
	"fmt"
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
