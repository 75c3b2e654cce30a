package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// Tolerances from shared/spec/MODELS.md §2 (Go float32 against exact float64).
const (
	logitsTol = 2e-4
	lossTol   = 2e-5
	offsetTol = 1e-2
)

var tinyModels = []string{"llama-tiny", "qwen3-tiny"}

// fixtureCase loads one tiny model and its references.
type fixtureCase struct {
	name string
	dir  string
	m    *Model
	ref  *fixture.Ref
	b, t int
}

func loadCase(t *testing.T, name string) *fixtureCase {
	t.Helper()
	dir := fixture.Dir(t, "fixtures", "models", name)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
	shape := ref.Shape("input_ids")
	return &fixtureCase{name: name, dir: dir, m: m, ref: ref, b: shape[0], t: shape[1]}
}

// realRows returns a row filter for [B·T] rows keeping mask == 1.
func realRows(mask []int) func(int) bool {
	return func(r int) bool { return mask[r] == 1 }
}

func checkClose(t *testing.T, what string, got []float32, want []float64, width int, keep func(int) bool, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	d, at := fixture.MaxAbsDiff(got, want, width, keep)
	if d > tol {
		t.Errorf("%s: max |Δ| = %.3g at flat index %d (got %g, want %g), tolerance %g", what, d, at, got[at], want[at], tol)
	} else {
		t.Logf("%s: max |Δ| = %.3g (tolerance %g)", what, d, tol)
	}
}

func checkLoss(t *testing.T, what string, got, want float64, tol float64) {
	t.Helper()
	if d := math.Abs(got - want); !(d <= tol) {
		t.Errorf("%s: got %.9g, want %.9g (|Δ| %.3g > %g)", what, got, want, d, tol)
	}
}

func TestForwardMatchesHF(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			mask := c.ref.Ints("attention_mask")
			in := Input{B: c.b, T: c.t, Tokens: c.ref.Ints("input_ids"), Mask: mask}
			out, err := c.m.Forward(in, Options{Logits: true, HiddenStates: true, Labels: c.ref.Ints("labels")})
			if err != nil {
				t.Fatal(err)
			}
			v := c.m.VocabSize
			checkClose(t, "logits", out.Logits, c.ref.F64("logits_f64"), v, realRows(mask), logitsTol)
			checkLoss(t, "batch loss", out.Loss, c.ref.F64("batch_loss_f64")[0], lossTol)
			for s, want := range c.ref.F64("loss_per_seq_f64") {
				checkLoss(t, "loss of sequence", out.LossPerSeq[s], want, lossTol)
			}
			// Hidden states: NumLayers+1 entries, the last after the final norm.
			want := c.ref.F64("hidden_states_f64")
			if len(out.HiddenStates) != c.m.NumLayers+1 {
				t.Fatalf("%d hidden states, want %d", len(out.HiddenStates), c.m.NumLayers+1)
			}
			per := c.b * c.t * c.m.HiddenSize
			for i, h := range out.HiddenStates {
				checkClose(t, "hidden state", h, want[i*per:(i+1)*per], c.m.HiddenSize, realRows(mask), logitsTol)
			}

			// The loss-only path (the last layer past attention and the LM head at
			// supervised positions only) gives the same loss.
			lossOnly, err := c.m.Forward(in, Options{Labels: c.ref.Ints("labels")})
			if err != nil {
				t.Fatal(err)
			}
			if lossOnly.Loss != out.Loss || lossOnly.Tokens != out.Tokens {
				t.Errorf("loss-only forward: loss %v over %d tokens, full forward %v over %d", lossOnly.Loss, lossOnly.Tokens, out.Loss, out.Tokens)
			}
		})
	}
}

func TestPaddingAndPositions(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			v := c.m.VocabSize
			right := c.ref.F64("logits_f64")
			leftMask := c.ref.Ints("left_attention_mask")
			leftIDs := c.ref.Ints("left_input_ids")

			// Left padding moves every real row; map left rows back to right rows.
			rightMask := c.ref.Ints("attention_mask")
			wantLeft := make([]float64, len(right))
			for b := 0; b < c.b; b++ {
				n := 0
				for i := 0; i < c.t; i++ {
					n += rightMask[b*c.t+i]
				}
				pad := c.t - n
				for i := 0; i < n; i++ {
					copy(wantLeft[(b*c.t+pad+i)*v:(b*c.t+pad+i+1)*v], right[(b*c.t+i)*v:(b*c.t+i+1)*v])
				}
			}
			for _, tc := range []struct {
				name      string
				positions []int
			}{
				{"generate-style positions", c.ref.Ints("left_position_ids")},
				{"default positions (pads counted)", nil},
			} {
				out, err := c.m.Forward(Input{B: c.b, T: c.t, Tokens: leftIDs, Mask: leftMask, Positions: tc.positions}, Options{Logits: true})
				if err != nil {
					t.Fatal(err)
				}
				checkClose(t, "left-padded logits, "+tc.name, out.Logits, wantLeft, v, realRows(leftMask), logitsTol)
				for _, x := range out.Logits {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("%s: non-finite logit at a padded row", tc.name)
					}
				}
			}

			out, err := c.m.Forward(Input{B: c.b, T: c.t, Tokens: c.ref.Ints("input_ids"), Mask: rightMask, Positions: c.ref.Ints("offset_position_ids")}, Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, "offset (+5000) logits", out.Logits, c.ref.F64("offset_logits_f64"), v, realRows(rightMask), offsetTol)
		})
	}
}

func TestRopeTables(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			checkClose(t, "inv_freq vs HF float32", c.m.invFreq, c.ref.F64("rope_inv_freq_f32"), 1, nil, 0)
			pos := c.ref.Ints("rope_positions")
			tab := newRopeTable(c.m.invFreq, pos, 1)
			hd := c.m.HeadDim
			cos := make([]float32, len(pos)*hd)
			sin := make([]float32, len(pos)*hd)
			for p := range pos {
				for i := 0; i < hd; i++ { // HF's table is cat(freqs, freqs)
					cos[p*hd+i] = tab.cos[p*tab.half+i%tab.half]
					sin[p*hd+i] = tab.sin[p*tab.half+i%tab.half]
				}
			}
			checkClose(t, "cos table", cos, c.ref.F64("rope_cos_f32"), hd, nil, 1e-6)
			checkClose(t, "sin table", sin, c.ref.F64("rope_sin_f32"), hd, nil, 1e-6)
		})
	}
}

func TestBF16Checkpoint(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			m, err := Load(filepath.Join(c.dir, "bf16"))
			if err != nil {
				t.Fatal(err)
			}
			mask := c.ref.Ints("attention_mask")
			out, err := m.Forward(Input{B: c.b, T: c.t, Tokens: c.ref.Ints("input_ids"), Mask: mask}, Options{Logits: true, Labels: c.ref.Ints("labels")})
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, "bf16-checkpoint logits vs HF f32", out.Logits, c.ref.F64("bf16ckpt_logits_f32"), m.VocabSize, realRows(mask), logitsTol)
			for s, want := range c.ref.F64("bf16ckpt_loss_per_seq_f32") {
				checkLoss(t, "bf16-checkpoint loss of sequence", out.LossPerSeq[s], want, lossTol)
			}
		})
	}
}

func TestGreedyGeneration(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			for g := 0; g < 2; g++ {
				prefix := "gen" + string(rune('0'+g)) + "_"
				prompt := c.ref.Ints(prefix + "prompt")
				want := c.ref.Ints(prefix + "new_tokens")
				wantLogits := c.ref.F64(prefix + "step_logits_f32")
				v := c.m.VocabSize
				var stepLogits []float32
				got, err := c.m.Generate(Input{B: 1, T: len(prompt), Tokens: prompt}, GenerateOptions{
					MaxNewTokens: len(want), StopIDs: []int{},
					OnStep: func(_ int, l []float32) { stepLogits = append(stepLogits, l...) },
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got[0], want) {
					t.Errorf("%s: generated %v, want %v", prefix, got[0], want)
				}
				checkClose(t, prefix+"step logits", stepLogits, wantLogits, v, nil, logitsTol)
			}
			ids, mask := c.ref.Ints("genbatch_input_ids"), c.ref.Ints("genbatch_attention_mask")
			want := c.ref.Ints("genbatch_new_tokens")
			got, err := c.m.Generate(Input{B: 2, T: len(ids) / 2, Tokens: ids, Mask: mask}, GenerateOptions{MaxNewTokens: len(want) / 2, StopIDs: []int{}})
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 2; r++ {
				if w := want[r*len(want)/2 : (r+1)*len(want)/2]; !slices.Equal(got[r], w) {
					t.Errorf("left-padded batch row %d: generated %v, want %v", r, got[r], w)
				}
			}
		})
	}
}

// TestBF16WeightsInMemory loads the BF16 checkpoints keeping their matrices
// in bfloat16: the logits must be bit-identical to float32 storage.
func TestBF16WeightsInMemory(t *testing.T) {
	for _, name := range tinyModels {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			dir := filepath.Join(c.dir, "bf16")
			f32, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			b16, err := LoadWith(dir, LoadOptions{BF16Weights: true})
			if err != nil {
				t.Fatal(err)
			}
			if !b16.Layers[0].MLP.Gate.(*cpu.Packed).IsBF16() || !b16.Embed.(*cpu.Packed).IsBF16() || f32.Embed.(*cpu.Packed).IsBF16() {
				t.Fatal("BF16Weights did not keep the BF16 matrices in bfloat16")
			}
			in := Input{B: c.b, T: c.t, Tokens: c.ref.Ints("input_ids"), Mask: c.ref.Ints("attention_mask")}
			a, err := f32.Forward(in, Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := b16.Forward(in, Options{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Logits, b.Logits) {
				t.Error("logits with bfloat16 weights in memory differ from float32 storage")
			}
			// An F32 checkpoint is never rounded.
			f, err := LoadWith(c.dir, LoadOptions{BF16Weights: true})
			if err != nil {
				t.Fatal(err)
			}
			if f.Embed.(*cpu.Packed).IsBF16() {
				t.Error("an F32 checkpoint's matrices were rounded to bfloat16")
			}
		})
	}
}
