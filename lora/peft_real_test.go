package lora

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// The round trip with the real PEFT (scripts/peft_check.py, transformers
// 4.51 + PEFT 0.15 on python3-torch): logits within peftTol of meazo-go's.
const peftTol = 2e-4

// TestRealPEFTRoundTrip: a LoRA adapter meazo-go saved loads in
// PeftModel.from_pretrained with the very tensors meazo-go wrote and gives
// meazo-go's logits; one PEFT made (get_peft_model, save_pretrained) loads
// in meazo-go with the tensors PEFT holds and gives PEFT's logits; and both
// adapters move the logits (a zero adapter would pass everything else).
// Each model is checked with two adapters: on q_proj and v_proj (the
// paper's), and on every projection of its layers (PEFT's
// target_modules="all-linear", newPEFTCheck).
func TestRealPEFTRoundTrip(t *testing.T) {
	py := fixture.NewPEFT(t)
	var checks []peftCheck
	var jobs []map[string]any
	for name, dir := range py.Models() {
		m, err := model.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		kinds := []string{"q_proj, v_proj", AllLinear}
		if name == "llama-tiny" || name == "opt-tiny" {
			kinds = append(kinds, "regex", "layers")
		}
		for _, kind := range kinds {
			c := newPEFTCheck(t, name, dir, m, kind)
			checks = append(checks, c)
			jobs = append(jobs, c.jobs()...)
		}
	}
	py.Run(map[string]any{"jobs": jobs})

	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			c.a.Attach(c.m) // the previous check of this model attached its own
			m, in := c.m, c.in
			real := func(r int) bool { return in.Mask[r] == 1 }
			base := fixture.Tensors(t, c.out("base"))["logits"]

			// meazo-go → PEFT.
			got := logits(t, m, in)
			loaded := fixture.Tensors(t, c.out("loaded"))
			sameTensors(t, "PEFT's tensors of meazo-go's adapter", fixture.Tensors(t, filepath.Join(c.ours, "adapter_model.safetensors")), loaded)
			fixture.CloseLogits(t, "meazo-go's adapter: meazo-go vs PEFT", got, loaded["logits"], m.VocabSize, real, peftTol)
			moves(t, "meazo-go's adapter", loaded["logits"], base, m.VocabSize, real)

			// PEFT → meazo-go.
			cfg, err := ReadPEFTConfig(filepath.Join(c.theirs, "adapter_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if re, ok := c.peftTargets.(string); ok && re != AllLinear && cfg.TargetModules.Regex != re {
				t.Errorf("PEFT saved target_modules %+v, not the regular expression %q", cfg.TargetModules, re)
			}
			b, err := Load(c.theirs, m, false)
			if err != nil {
				t.Fatal(err)
			}
			b.Attach(m)
			got = logits(t, m, in)
			m.Adapter = nil
			made := fixture.Tensors(t, c.out("made"))
			back := filepath.Join(t.TempDir(), "peft-lora-resaved")
			if err := b.Save(back); err != nil {
				t.Fatal(err)
			}
			sameTensors(t, "meazo-go's tensors of PEFT's adapter", fixture.Tensors(t, filepath.Join(back, "adapter_model.safetensors")), made)
			fixture.CloseLogits(t, "PEFT's adapter: meazo-go vs PEFT", got, made["logits"], m.VocabSize, real, peftTol)
			moves(t, "PEFT's adapter", made["logits"], base, m.VocabSize, real)
		})
	}
}

// peftCheck is one adapter's round trip with the real PEFT: meazo-go's
// adapter a (saved to ours) and PEFT's (made by it in theirs), on model m
// and the input of its fixture; out names a job's output file.
type peftCheck struct {
	name, dir, ours, theirs string
	m                       *model.Model
	in                      model.Input
	a                       *Adapter
	peftTargets             any   // get_peft_model's target_modules
	layers                  []int // its layers_to_transform (nil: every layer)
	out                     func(job string) string
}

// newPEFTCheck saves meazo-go's adapter of rank 4 on m (the fixture's model
// in dir), of one kind: on q_proj and v_proj; on every projection of its
// layers (AllLinear; PEFT's "all-linear" too, which on opt-tiny's 18
// projections PEFT saves as module paths, but for OPT-350m's shape, whose
// project_in and project_out PEFT's all-linear takes as well: the list of
// its layers' six); ("regex") on q_proj and the last projection,
// down_proj or fc2, which PEFT is given as a regular expression and saves
// so; or ("layers") on q_proj and v_proj of layers 1 and 2 only
// (layers_to_transform).
func newPEFTCheck(t *testing.T, name, dir string, m *model.Model, kind string) peftCheck {
	t.Helper()
	ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
	shape, ids, mask := ref.Shape("input_ids"), ref.Ints("input_ids"), ref.Ints("attention_mask")
	targets, peftTargets := []string{"q_proj", "v_proj"}, any([]string{"q_proj", "v_proj"})
	var layers []int
	switch kind {
	case AllLinear:
		targets, peftTargets, name = []string{AllLinear}, AllLinear, name+"/all-linear"
		if m.WordEmbedDim != 0 && m.WordEmbedDim != m.HiddenSize {
			names, _ := TargetNames(&m.Config, targets)
			peftTargets = names
		}
	case "regex":
		ps := m.Projections()
		last := ps[len(ps)-1].Name
		targets, peftTargets, name = []string{"q_proj", last}, `.*\.(q_proj|`+last+`)`, name+"/regex"
	case "layers":
		layers, name = []int{1, 2}, name+"/layers-1-2"
	}
	// meazo-go's adapter: PEFT's shape, values as training leaves them.
	a, err := New(m, Options{R: 4, Alpha: 8, Targets: targets, Layers: layers, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, p := range a.Params() {
		for i := range p {
			p[i] = float32(0.2 * r.NormFloat64())
		}
	}
	a.SetBaseModel(dir)
	tmp := t.TempDir()
	c := peftCheck{name: name, dir: dir, ours: filepath.Join(tmp, "meazo-lora"), theirs: filepath.Join(tmp, "peft-lora"), m: m, a: a,
		in: model.Input{B: shape[0], T: shape[1], Tokens: ids, Mask: mask}, peftTargets: peftTargets, layers: layers,
		out: func(job string) string { return filepath.Join(tmp, job+".safetensors") }}
	if err := a.Save(c.ours); err != nil {
		t.Fatal(err)
	}
	return c
}

// jobs are scripts/peft_check.py's jobs of c: the base model's logits,
// PEFT's logits with meazo-go's adapter, and PEFT's own adapter made.
func (c peftCheck) jobs() []map[string]any {
	in := c.in
	return []map[string]any{
		fixture.PEFTJob(map[string]any{"kind": "base"}, c.dir, in.Tokens, in.Mask, in.B, c.out("base")),
		fixture.PEFTJob(map[string]any{"kind": "load", "adapter": c.ours}, c.dir, in.Tokens, in.Mask, in.B, c.out("loaded")),
		fixture.PEFTJob(map[string]any{"kind": "make-lora", "dir": c.theirs, "r": 4, "alpha": 8, "targets": c.peftTargets, "layers": c.layers, "seed": 1}, c.dir, in.Tokens, in.Mask, in.B, c.out("made")),
	}
}

// logits is m's fp32 forward of in, [B·T·V].
func logits(t *testing.T, m *model.Model, in model.Input) []float32 {
	t.Helper()
	out, err := m.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	return out.Logits
}

// sameTensors: every tensor of the adapter file (names as saved) is in
// peft's dump ("adapter/<name>") with the same bits, and nothing else is.
func sameTensors(t *testing.T, what string, file, peft map[string][]float32) {
	t.Helper()
	n := 0
	for k, v := range peft {
		if name, ok := cutPrefix(k, "adapter/"); ok {
			n++
			if w, ok := file[name]; !ok || !slices.Equal(v, w) {
				t.Errorf("%s: %s differs or is missing from the file (file has %d tensors)", what, name, len(file))
			}
		}
	}
	if n != len(file) || n == 0 {
		t.Errorf("%s: %d tensors, the file has %d", what, n, len(file))
	}
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// moves: the adapter changes the logits by more than rounding could.
func moves(t *testing.T, what string, with, without []float32, v int, keep func(int) bool) {
	t.Helper()
	if d, _ := fixture.MaxAbsDiff(with, fixture.Widen(without), v, keep); d < 100*peftTol || math.IsNaN(d) {
		t.Errorf("%s moves the logits by at most %.3g: a zero adapter would pass this test", what, d)
	}
}
