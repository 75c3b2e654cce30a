package train

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// keyUse is a key that only some runs read: the values of use (the
// adapter's kind, the optimizer's name, the task's name) that read it.
type keyUse struct {
	key  string
	of   func(c *Config) string // the setting that decides
	what string                 // the setting's key, for the message
	use  []string
}

func adapterKind(c *Config) string   { return c.Adapter.Kind }
func optimizerName(c *Config) string { return c.Optimizer.Name }
func taskName(c *Config) string      { return c.Task.Name }

// keyUses lists the keys a run may not read: an adapter's shape under
// another adapter.kind, one optimizer's hyperparameter under another,
// a task's evaluation option under another task.
var keyUses = []keyUse{
	{"adapter.r", adapterKind, "adapter.kind", []string{"lora"}},
	{"adapter.alpha", adapterKind, "adapter.kind", []string{"lora"}},
	{"adapter.rslora", adapterKind, "adapter.kind", []string{"lora"}},
	{"adapter.layers", adapterKind, "adapter.kind", []string{"lora"}},
	{"adapter.targets", adapterKind, "adapter.kind", []string{"lora"}},
	{"adapter.virtual_tokens", adapterKind, "adapter.kind", []string{"prompt"}},
	{"adapter.init_text", adapterKind, "adapter.kind", []string{"prompt"}},
	{"eval.merge", adapterKind, "adapter.kind", []string{"lora"}},
	{"optimizer.beta", optimizerName, "optimizer.name", []string{"meazo"}},
	{"optimizer.zeta", optimizerName, "optimizer.name", []string{"meazo"}},
	{"optimizer.beta1", optimizerName, "optimizer.name", []string{"zo-adam", "radazo"}},
	{"optimizer.beta2", optimizerName, "optimizer.name", []string{"zo-adam", "radazo"}},
	{"optimizer.bias_correction", optimizerName, "optimizer.name", []string{"radazo"}},
	{"optimizer.momentum", optimizerName, "optimizer.name", []string{"zo-sgd"}},
	{"optimizer.weight_decay", optimizerName, "optimizer.name", []string{"zo-sgd"}},
	{"eval.rouge_stem", taskName, "task.name", []string{"xsum", "generation"}},
	{"eval.max_new_tokens", taskName, "task.name", []string{"squad", "xsum", "generation"}},
}

// ignoredSets says which of the --set keys c's run does not read, each
// with why: --set optimizer.momentum=0.9 on a MEAZO run, or adapter.r on
// a full-parameter one, was accepted and had no effect. They are noted,
// not refused: a study's set lines go to every optimizer's runs, and a
// key in the config file is not named (a generated config carries its
// optimizer's keys, which another optimizer.name then leaves unread).
func ignoredSets(c *Config, overrides []string) []string {
	var notes []string
	for _, o := range overrides {
		key, _, _ := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		i := slices.IndexFunc(keyUses, func(u keyUse) bool { return u.key == key })
		if i < 0 {
			continue
		}
		u := keyUses[i]
		if v := u.of(c); !slices.Contains(u.use, v) {
			note := fmt.Sprintf("--set %s has no effect: it is read only with %s %s, and this run's is %s", key, u.what, strings.Join(u.use, " or "), v)
			if !slices.Contains(notes, note) {
				notes = append(notes, note)
			}
		}
	}
	return notes
}

// noteIgnoredSets prints ignoredSets' notes on the run's log.
func noteIgnoredSets(log io.Writer, c *Config, overrides []string) {
	for _, n := range ignoredSets(c, overrides) {
		fmt.Fprintln(log, "note:", n)
	}
}
