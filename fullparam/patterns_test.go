package fullparam

import (
	"errors"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// TestPatterns: an include or exclude pattern that names none of the
// model's tensors is refused, naming the pattern, its list and the
// model's own names (Llama's embedding name on OPT froze nothing, without a
// word), and so is a malformed one; patterns that match train as asked.
func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		arch        string
		opts        Options
		wantList    string // "": accepted
		wantInMsg   string
		wantTrained int64 // when accepted: parameters left out, -1 for none, -2 for some
	}{
		{"llama exclude embeddings", "LlamaForCausalLM", Options{Exclude: []string{"model.embed_tokens.weight"}}, "", "", 96 * 32},
		{"opt exclude embeddings", "OPTForCausalLM", Options{Exclude: []string{"model.decoder.embed_tokens.weight"}}, "", "", 96 * 32},
		{"opt with llama's embedding name", "OPTForCausalLM", Options{Exclude: []string{"model.embed_tokens.weight"}},
			"exclude", "model.decoder.embed_tokens.weight", 0},
		{"opt with llama's layer glob", "OPTForCausalLM", Options{Include: []string{"model.layers.*"}}, "include", "model.decoder.layers.0.", 0},
		{"one of two includes matches nothing", "LlamaForCausalLM", Options{Include: []string{"model.layers.*", "model.norm"}},
			"include", `"model.norm"`, 0},
		{"lm_head of a tied model", "Qwen3ForCausalLM", Options{Exclude: []string{"lm_head.weight"}}, "exclude",
			"tied to its embeddings (tie_word_embeddings), so it has no lm_head.weight: model.embed_tokens.weight is both", 0},
		{"lm_head of a tied OPT", "OPTForCausalLM", Options{Exclude: []string{"lm_head.weight"}}, "exclude",
			"so it has no lm_head.weight: model.decoder.embed_tokens.weight is both", 0},
		{"the names shown end with the last ones", "LlamaForCausalLM", Options{Exclude: []string{"model.final_norm.weight"}}, "exclude",
			", …, model.layers.1.post_attention_layernorm.weight, model.norm.weight)", 0},
		{"lm_head of a tied model, included", "Qwen3ForCausalLM", Options{Include: []string{"lm_head.weight"}}, "include",
			"model.embed_tokens.weight is both, and including it trains both", 0},
		{"exclude outside the include", "LlamaForCausalLM", Options{Include: []string{"model.layers.0.*"}, Exclude: []string{"model.layers.1.*"}},
			"exclude", `exclude pattern "model.layers.1.*" matches none of the tensors the include patterns ["model.layers.0.*"] select`, 0},
		{"exclude inside the include", "LlamaForCausalLM", Options{Include: []string{"model.layers.*"}, Exclude: []string{"model.layers.1.*"}},
			"", "", -2},
		{"malformed", "LlamaForCausalLM", Options{Exclude: []string{"model.layers.[0"}}, "exclude", "syntax error", 0},
		{"every tensor", "Qwen3ForCausalLM", Options{}, "", "", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(tc.arch, true)
			m, err := model.FromValues(c, values(c, 1), model.LoadOptions{Backend: cpu.New(cpu.Options{Threads: 1}), Unstacked: true})
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(m, tc.opts)
			if tc.wantList == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.wantTrained == -2 { // some trained, some not
					if p.Count() == 0 || p.Count() == p.ModelSize() {
						t.Errorf("trains %d of %d parameters", p.Count(), p.ModelSize())
					}
					return
				}
				if want := tc.wantTrained; want < 0 && p.Count() != p.ModelSize() || want >= 0 && p.ModelSize()-p.Count() != want {
					t.Errorf("trains %d of %d parameters; want %d left out", p.Count(), p.ModelSize(), tc.wantTrained)
				}
				return
			}
			var pe *PatternError
			if !errors.As(err, &pe) || pe.List != tc.wantList || !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("error %v; want a PatternError of %s naming %q", err, tc.wantList, tc.wantInMsg)
			}
		})
	}
}

// TestPatternSuggest: a pattern a typo away from the model's names is
// refused with the pattern that matches ("did you mean"), a glob's typo
// too, and Llama's names on OPT (under model.decoder.); one far from every
// name gets none.
func TestPatternSuggest(t *testing.T) {
	for _, tc := range []struct {
		arch, pattern, want string
	}{
		{"LlamaForCausalLM", "model.embed_token.weight", "model.embed_tokens.weight"},
		{"LlamaForCausalLM", "model.layer.*", "model.layers.*"},
		{"LlamaForCausalLM", "model.layerz.1.*", "model.layers.1.*"},
		{"Qwen3ForCausalLM", "model.nrom.weight", "model.norm.weight"},
		{"OPTForCausalLM", "model.decoder.embed_tokens", ""},                                 // ".weight" missing: 7 edits, none
		{"OPTForCausalLM", "model.embed_tokens.weight", "model.decoder.embed_tokens.weight"}, // Llama's name on OPT
		{"OPTForCausalLM", "model.layers.*", "model.decoder.layers.*"},
		{"LlamaForCausalLM", "model.decoder.layers.*", ""}, // OPT's on Llama: 8 edits
		{"LlamaForCausalLM", "foo", ""},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			c := tinyConfig(tc.arch, true)
			m, err := model.FromValues(c, values(c, 1), model.LoadOptions{Backend: cpu.New(cpu.Options{Threads: 1}), Unstacked: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(m, Options{Exclude: []string{tc.pattern}})
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v; want a PatternError", err)
			}
			if pe.Suggest != tc.want {
				t.Errorf("suggests %q; want %q (%v)", pe.Suggest, tc.want, err)
			}
			if tc.want != "" && !strings.Contains(err.Error(), `did you mean "`+tc.want+`"?`) {
				t.Errorf("message %q does not ask `did you mean %q?`", err, tc.want)
			}
			if tc.want == "" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("message %q suggests a pattern", err)
			}
		})
	}
}
