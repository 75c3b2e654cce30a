package prompttune

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// peftTol bounds the fp32 logits' difference with the real PEFT's.
const peftTol = 2e-4

// fixedIDs is an Encoder that returns the same token ids for any text.
type fixedIDs []int

func (f fixedIDs) Encode(string, bool) []int { return f }

// TestRealPEFTRoundTrip: a prompt-tuning adapter meazo-go saved (TEXT init,
// the base model and tokenizer named, as meazo-train writes it) loads in
// PeftModel.from_pretrained with the very embeddings meazo-go wrote and
// gives meazo-go's logits, virtual-token rows included, and its
// adapter_config.json has the keys PEFT writes; one PEFT made loads
// in meazo-go with PEFT's embeddings and gives PEFT's logits; both move the
// logits of the real tokens. FromText gives PEFT's own TEXT initialisation
// bit for bit, the text's ids cut (fewer virtual tokens), taken once
// (as many) or repeated (more); PEFT's adapter saved with
// safe_serialization=False (adapter_model.bin) is refused, saying so.
func TestRealPEFTRoundTrip(t *testing.T) {
	py := fixture.NewPEFT(t)
	const n = 5
	type check struct {
		name, ours, theirs string
		m                  *model.Model
		in                 model.Input
		p                  *Prompt
		out                func(job string) string
	}
	var checks []check
	var jobs []map[string]any
	for name, dir := range py.Models() {
		m, err := model.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.WordEmbedDim != 0 && m.WordEmbedDim != m.HiddenSize {
			continue // OPT-350m's shape: prompt tuning needs embeddings of the hidden size (PEFT fails on it too)
		}
		ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
		shape, ids, mask := ref.Shape("input_ids"), ref.Ints("input_ids"), ref.Ints("attention_mask")
		p, err := FromText(m, fixedIDs{1, 17, 42}, n, "Sentiment task")
		if err != nil {
			t.Fatal(err)
		}
		p.BaseModel, p.Tokenizer = dir, dir // as meazo-train names them
		tmp := t.TempDir()
		c := check{name: name, ours: filepath.Join(tmp, "meazo-prompt"), theirs: filepath.Join(tmp, "peft-prompt"), m: m, p: p,
			in:  model.Input{B: shape[0], T: shape[1], Tokens: ids, Mask: mask},
			out: func(job string) string { return filepath.Join(tmp, job+".safetensors") }}
		if err := p.Save(c.ours, m); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, c)
		jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "base"}, dir, ids, mask, shape[0], c.out("base")),
			fixture.PEFTJob(map[string]any{"kind": "load", "adapter": c.ours}, dir, ids, mask, shape[0], c.out("loaded")),
			fixture.PEFTJob(map[string]any{"kind": "make-prompt", "dir": c.theirs, "n": n, "seed": 1}, dir, ids, mask, shape[0], c.out("made")),
			fixture.PEFTJob(map[string]any{"kind": "make-prompt", "dir": c.theirs + "-bin", "n": n, "seed": 1, "safe_serialization": false}, dir, ids, mask, shape[0], c.out("made-bin")))
		for _, k := range textCounts {
			jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "make-prompt-text", "dir": filepath.Join(tmp, fmt.Sprintf("text%d", k)), "n": k,
				"text": initText, "ids": []int(initIDs), "seed": 1}, dir, ids, mask, shape[0], c.out(fmt.Sprintf("text%d", k))))
		}
	}
	py.Run(map[string]any{"jobs": jobs})

	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			m, in, v := c.m, c.in, c.m.VocabSize
			// Rows of the [B, n+T] logits: the virtual tokens', and the real
			// tokens' (not padding).
			withPrompt := func(r int) bool {
				b, pos := r/(n+in.T), r%(n+in.T)
				return pos < n || in.Mask[b*in.T+pos-n] == 1
			}
			base := fixture.Tensors(t, c.out("base"))["logits"]

			// meazo-go → PEFT.
			c.p.Attach(m)
			got := logits(t, m, in)
			loaded := fixture.Tensors(t, c.out("loaded"))
			saved := fixture.Tensors(t, filepath.Join(c.ours, "adapter_model.safetensors"))
			if !slices.Equal(loaded["adapter/prompt_embeddings"], saved["prompt_embeddings"]) || len(saved["prompt_embeddings"]) != n*m.HiddenSize {
				t.Errorf("PEFT's prompt embeddings differ from those meazo-go saved")
			}
			fixture.CloseLogits(t, "meazo-go's prompt: meazo-go vs PEFT", got, loaded["logits"], v, withPrompt, peftTol)
			moves(t, "meazo-go's prompt", loaded["logits"], base, n, in, v)

			// PEFT → meazo-go.
			q, err := Load(c.theirs, m)
			if err != nil {
				t.Fatal(err)
			}
			q.Attach(m)
			got = logits(t, m, in)
			m.Prompt = nil
			made := fixture.Tensors(t, c.out("made"))
			if !slices.Equal(q.Params()[0], made["adapter/prompt_embeddings"]) {
				t.Errorf("meazo-go's prompt embeddings of PEFT's adapter differ from PEFT's")
			}
			fixture.CloseLogits(t, "PEFT's prompt: meazo-go vs PEFT", got, made["logits"], v, withPrompt, peftTol)
			moves(t, "PEFT's prompt", made["logits"], base, n, in, v)
			if ours, theirs := configKeySet(t, c.ours), configKeySet(t, c.theirs); !slices.Equal(ours, theirs) {
				t.Errorf("adapter_config.json keys: meazo-go writes %v, PEFT %v", ours, theirs)
			}

			// PEFT's TEXT initialisation.
			for _, k := range textCounts {
				p, err := FromText(m, initIDs, k, initText)
				if err != nil {
					t.Fatal(err)
				}
				want := fixture.Tensors(t, c.out(fmt.Sprintf("text%d", k)))["adapter/prompt_embeddings"]
				if !slices.Equal(p.Params()[0], want) || len(want) != k*m.HiddenSize {
					t.Errorf("%d virtual tokens from %d text tokens: FromText's embeddings differ from PEFT's TEXT init", k, len(initIDs))
				}
			}

			// PEFT's adapter_model.bin.
			bin := c.theirs + "-bin"
			if _, err := os.Stat(filepath.Join(bin, "adapter_model.bin")); err != nil {
				t.Fatalf("PEFT's safe_serialization=False: %v", err)
			}
			if _, err := Load(bin, m); err == nil || !strings.Contains(err.Error(), "adapter_model.bin") || !strings.Contains(err.Error(), "safe_serialization=True") {
				t.Errorf("PEFT's adapter_model.bin: %v, want an error naming it and the way out", err)
			}
		})
	}
}

// initText and initIDs are the TEXT init's text and its token ids (what a
// tokenizer would give); textCounts are the numbers of virtual tokens made
// from them: fewer, as many and more than the ids.
const initText = "Sentiment task"

var (
	initIDs    = fixedIDs{1, 17, 42, 99, 3}
	textCounts = []int{1, 3, 5, 7, 12}
)

// configKeySet is the sorted keys of dir's adapter_config.json.
func configKeySet(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(cfg))
}

// logits is m's fp32 forward of in: [B·(n+T)·V] with a prompt attached.
func logits(t *testing.T, m *model.Model, in model.Input) []float32 {
	t.Helper()
	out, err := m.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	return out.Logits
}

// moves: with the prompt, the real tokens' logits (rows n.. of each
// sequence) differ from the base model's by more than rounding could.
func moves(t *testing.T, what string, with, base []float32, n int, in model.Input, v int) {
	t.Helper()
	maxd := 0.0
	for b := range in.B {
		for pos := range in.T {
			if in.Mask[b*in.T+pos] == 0 {
				continue
			}
			w, o := with[(b*(n+in.T)+n+pos)*v:][:v], base[(b*in.T+pos)*v:][:v]
			for i := range w {
				maxd = math.Max(maxd, math.Abs(float64(w[i])-float64(o[i])))
			}
		}
	}
	if maxd < 100*peftTol {
		t.Errorf("%s moves the real tokens' logits by at most %.3g: an adapter that does nothing would pass this test", what, maxd)
	}
}
