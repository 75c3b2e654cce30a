package train

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/prompttune"
)

// checkInitAdapter refuses an adapter.init whose shape differs from the
// adapter the config describes: the run would train one shape while its
// config.yaml (and every record of the run) says another.
func checkInitAdapter(cfg *Config, l *lora.Adapter, p *prompttune.Prompt) error {
	a := cfg.Adapter
	if l != nil {
		got, want := slices.Sorted(slices.Values(l.Targets())), slices.Sorted(slices.Values(a.Targets))
		if l.Rank() != a.R || l.Alpha() != a.Alpha || !slices.Equal(got, want) {
			return fmt.Errorf("adapter.init %s is a LoRA of rank %d, alpha %g on %v, but the config says adapter.r %d, adapter.alpha %g, adapter.targets %v: set them to match the adapter",
				a.Init, l.Rank(), l.Alpha(), l.Targets(), a.R, a.Alpha, a.Targets)
		}
	}
	if p != nil && p.N != a.VirtualTokens {
		return fmt.Errorf("adapter.init %s has %d virtual tokens, but adapter.virtual_tokens is %d: set it to match the adapter", a.Init, p.N, a.VirtualTokens)
	}
	return nil
}
