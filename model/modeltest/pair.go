package modeltest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// pair is one model loaded on the CPU backend (host) and on the backend
// under test (seam), with the checks that compare them.
type pair struct {
	t          *testing.T
	b          tensor.Backend
	host, seam *model.Model
	tol        backendtest.Tolerance
	dev        *backendtest.Device // b, when it is a Device: its downloads are counted
	afterLoad  func(what string)   // reports what b holds beyond the loaded model
}

// downloads counts b's downloads so far (0 unless b is a Device).
func (p *pair) downloads() int {
	if p.dev == nil {
		return 0
	}
	return p.dev.Downloads
}

// same compares float32 results: bit for bit (tol.Exact) or within
// tol.Logits.
func (p *pair) same(what string, got, want []float32) {
	p.t.Helper()
	if p.tol.Exact {
		if !backendtest.SameBits(got, want) {
			p.t.Errorf("%s differ from the CPU backend's", what)
		}
		return
	}
	w := make([]float64, len(want))
	for i, v := range want {
		w[i] = float64(v)
	}
	closeTo(p.t, what+" vs CPU", got, w, len(got), nil, p.tol.Logits)
}

// sameLoss compares losses: bit for bit (tol.Exact) or within tol.Loss.
func (p *pair) sameLoss(what string, got, want []float64) {
	p.t.Helper()
	for i := range want {
		if p.tol.Exact && math.Float64bits(got[i]) != math.Float64bits(want[i]) ||
			!p.tol.Exact && !(math.Abs(got[i]-want[i]) <= p.tol.Loss) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			p.t.Errorf("%s %d: %.17g, the CPU backend's %.17g", what, i, got[i], want[i])
		}
	}
}

// forward compares a forward with logits, hidden states and losses, then
// checks that a loss-only forward downloads nothing and gives the same loss.
// It returns the largest |value| of the CPU's hidden states.
func (p *pair) forward(what string, in model.Input, labels []int) (largest float64) {
	t := p.t
	opts := model.Options{Logits: true, HiddenStates: true, Labels: labels}
	want, err := p.host.Forward(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.seam.Forward(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	p.same(what+" logits", got.Logits, want.Logits)
	p.sameLoss(what+" loss", append([]float64{got.Loss}, got.LossPerSeq...), append([]float64{want.Loss}, want.LossPerSeq...))
	for i := range want.HiddenStates {
		p.same(what+" hidden state", got.HiddenStates[i], want.HiddenStates[i])
		for _, v := range want.HiddenStates[i] {
			largest = math.Max(largest, math.Abs(float64(v)))
		}
	}
	p.afterLoad(what + " forward")
	before := p.downloads()
	lossOnly, err := p.seam.Forward(in, model.Options{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.downloads() - before; n != 0 {
		t.Errorf("%s loss-only forward downloaded %d buffers, want 0", what, n)
	}
	// The loss-only forward runs the LM head, and the last layer past its
	// attention, on the supervised rows alone: the CPU's GEMM gives each
	// row the same bits whatever the row count, cuBLAS picks its kernel
	// (tiles, split-K) by the shape, so there the loss agrees to rounding
	// (H200: 4e-7 of 12.9, before the last layer was cut too).
	if p.tol.Exact && lossOnly.Loss != got.Loss || !p.tol.Exact && !(math.Abs(lossOnly.Loss-got.Loss) <= p.tol.Loss) {
		t.Errorf("%s: the loss-only forward's loss %.17g differs from the full forward's %.17g", what, lossOnly.Loss, got.Loss)
	}
	p.afterLoad(what + " loss-only forward")
	p.choices(what, in)
	return largest
}

// choices compares Options.Choices (a classification's label candidates
// scored from one forward): each row of in supervised at its last real
// token, scored against three other tokens besides that one.
func (p *pair) choices(what string, in model.Input) {
	labels, choices := make([]int, in.B*in.T), make([][]int, in.B)
	for i := range labels {
		labels[i] = -100
	}
	for s := range in.B {
		last := s*in.T - 1 // right padding: the row's last real token
		for _, v := range in.Mask[s*in.T : (s+1)*in.T] {
			last += v
		}
		labels[last] = in.Tokens[last]
		choices[s] = []int{in.Tokens[last], (in.Tokens[last] + 1) % p.host.VocabSize, s, p.host.VocabSize - 1}
	}
	opts := model.Options{Labels: labels, Choices: choices}
	want, err := p.host.Forward(in, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	got, err := p.seam.Forward(in, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	for s := range want.ChoiceLoss {
		p.sameLoss(fmt.Sprintf("%s choices of row %d", what, s), got.ChoiceLoss[s], want.ChoiceLoss[s])
	}
	p.afterLoad(what + " choices")
}

// generate compares a left-padded greedy generation: the tokens, and the
// logits of every step.
func (p *pair) generate(what string, gen model.Input) {
	t := p.t
	var wantSteps, gotSteps []float32
	wantGen, err := p.host.Generate(gen, model.GenerateOptions{MaxNewTokens: 6, StopIDs: []int{}, OnStep: func(_ int, l []float32) { wantSteps = append(wantSteps, l...) }})
	if err != nil {
		t.Fatal(err)
	}
	gotGen, err := p.seam.Generate(gen, model.GenerateOptions{MaxNewTokens: 6, StopIDs: []int{}, OnStep: func(_ int, l []float32) { gotSteps = append(gotSteps, l...) }})
	if err != nil {
		t.Fatal(err)
	}
	for r := range wantGen {
		if !slices.Equal(gotGen[r], wantGen[r]) {
			t.Errorf("%s generation row %d: %v on %s, %v on the CPU", what, r, gotGen[r], p.b.Name(), wantGen[r])
		}
	}
	p.same(what+" generation step logits", gotSteps, wantSteps)
	p.afterLoad(what + " generation")
}

// losses compares batched variants' losses (model.Losses), checks that
// they download nothing and that a second run repeats their bits.
func (p *pair) losses(in model.Input, labels []int, base model.Variant, variants []model.Variant) {
	t := p.t
	wantL, _, err := p.host.Losses(in, labels, base, variants)
	if err != nil {
		t.Fatal(err)
	}
	before := p.downloads()
	gotL, _, err := p.seam.Losses(in, labels, base, variants)
	if err != nil {
		t.Fatal(err)
	}
	p.sameLoss("Losses", gotL, wantL)
	if n := p.downloads() - before; n != 0 {
		t.Errorf("Losses downloaded %d buffers, want 0", n)
	}
	again, _, err := p.seam.Losses(in, labels, base, variants)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again, gotL, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
		t.Errorf("Losses: a second run gives other bits: %v then %v", gotL, again)
	}
	p.afterLoad("Losses")
}
