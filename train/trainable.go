package train

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

// trainableLine is the run log's line on what trains and how much of the
// model that is, as PEFT's print_trainable_parameters says it (trainable
// params, all params, trainable%): for full-parameter training, total is
// the model's parameters; for an adapter, adapterLine's.
func trainableLine(trainable, total int64, what string) string {
	return fmt.Sprintf("trainable: %s of %s parameters (%.3g %%): %s", groupDigits(trainable), groupDigits(total), 100*float64(trainable)/float64(max(total, 1)), what)
}

// adapterLine is trainableLine for an adapter of trainable parameters on a
// model of base parameters (transformers' num_parameters). PEFT counts the
// adapter among all the parameters, as it counts the modules of the
// PeftModel (a ViT's trainable copy of its classifier too, beside the
// frozen one): Qwen3-0.6B's 596,049,920 with LoRA r 16 on q_proj and v_proj
//
//	trainable: 2,293,760 of 598,343,680 parameters (0.383 %): LoRA r 16, alpha 16 on q_proj, v_proj
//
// where base alone as the total gave 0.385 %, and more than 100 % for an
// adapter larger than a tiny model.
func adapterLine(trainable, base int64, what string) string {
	return trainableLine(trainable, base+trainable, what)
}

// adapterWhat says what adapter trains (LoRA or prompt tuning), for
// trainableLine; c is the decoder's config (nil for a ViT, whose adapter
// trains the classifier too).
func adapterWhat(cfg *Config, c *model.Config) string {
	a := cfg.Adapter
	what := fmt.Sprintf("prompt tuning, %d virtual tokens", a.VirtualTokens)
	if a.Kind == "lora" {
		names := a.Targets
		if c != nil {
			names, _ = lora.TargetNames(c, a.Targets) // checked when the adapter was made
		}
		rs := ""
		if a.RSLoRA {
			rs = " (rsLoRA: scale alpha/√r)"
		}
		what = fmt.Sprintf("LoRA r %d, alpha %g%s on %s", a.R, a.Alpha, rs, strings.Join(names, ", "))
		if len(a.Layers) > 0 {
			what += " of " + layerList(a.Layers)
		}
		if c == nil {
			what += " and the classifier"
		}
	}
	if a.Init != "" {
		what += ", from adapter.init " + a.Init
	}
	return what
}

// layerList names decoder layers: "layer 3", "layers 20 to 27" (a run of
// them), "layers 1, 5, 9".
func layerList(layers []int) string {
	ls := slices.Sorted(slices.Values(layers))
	if len(ls) == 1 {
		return fmt.Sprintf("layer %d", ls[0])
	}
	if ls[len(ls)-1]-ls[0] == len(ls)-1 {
		return fmt.Sprintf("layers %d to %d", ls[0], ls[len(ls)-1])
	}
	var s []string
	for _, l := range ls {
		s = append(s, strconv.Itoa(l))
	}
	return "layers " + strings.Join(s, ", ")
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
