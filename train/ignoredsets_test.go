package train

import (
	"strings"
	"testing"
)

// TestIgnoredSets: a --set key the run does not read is noted with the
// setting that would read it; one it reads, or a key of the file, is not.
func TestIgnoredSets(t *testing.T) {
	for _, c := range []struct {
		name      string
		kind, opt string
		task      string
		sets      []string
		want      []string // substrings, one per note, in order
	}{
		{"full with a LoRA rank", "full", "meazo", "sst2", []string{"adapter.r=8"}, []string{"--set adapter.r has no effect: it is read only with adapter.kind lora, and this run's is full"}},
		{"meazo with momentum", "full", "meazo", "sst2", []string{"optimizer.momentum=0.9"}, []string{"optimizer.momentum has no effect: it is read only with optimizer.name zo-sgd, and this run's is meazo"}},
		{"zo-sgd with momentum", "full", "zo-sgd", "sst2", []string{"optimizer.momentum=0.9", "optimizer.lr=1e-6"}, nil},
		{"fzoo with Adam's decays", "lora", "fzoo", "sst2", []string{"optimizer.beta1=0", " optimizer.beta2 = 0.9"}, []string{"optimizer.beta1", "optimizer.beta2 has no effect: it is read only with optimizer.name zo-adam or radazo"}},
		{"lora with prompt tuning's text", "lora", "meazo", "squad", []string{"adapter.init_text=x", "eval.max_new_tokens=10"}, []string{"adapter.init_text"}},
		{"sst2 generates nothing", "lora", "meazo", "sst2", []string{"eval.max_new_tokens=10", "eval.rouge_stem=true"}, []string{"eval.max_new_tokens", "eval.rouge_stem"}},
		{"generation generates", "lora", "meazo", "generation", []string{"eval.max_new_tokens=10", "eval.rouge_stem=true"}, nil},
		{"classification generates nothing", "lora", "meazo", "classification", []string{"eval.max_new_tokens=10", "eval.rouge_stem=true"},
			[]string{"eval.max_new_tokens has no effect: it is read only with task.name squad or xsum or generation", "eval.rouge_stem"}},
		{"the same key twice, one note", "prompt", "radazo", "sst2", []string{"adapter.r=4", "adapter.r=8", "optimizer.bias_correction=true"}, []string{"adapter.r"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Adapter.Kind, cfg.Optimizer.Name, cfg.Task.Name = c.kind, c.opt, c.task
			got := ignoredSets(&cfg, c.sets)
			if len(got) != len(c.want) {
				t.Fatalf("notes %q; want %d", got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("note %d %q lacks %q", i, got[i], w)
				}
			}
		})
	}
}
