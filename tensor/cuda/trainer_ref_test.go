package cuda

import (
	"bytes"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor/backendtest"
	"github.com/meazo-go/meazo/tensor/cpu"
	"github.com/meazo-go/meazo/zo"
)

// The references of the Trainer's tests, for the emulator's and the GPU's:
// package noise's normals of given words, and full-parameter steps on a
// CUDA backend against the CPU's.

// Philox4x32-10's multipliers and key increments (noise/philox.go).
const (
	philoxM0, philoxM1 = 0xD2511F53, 0xCD9E8D57
	philoxW0, philoxW1 = 0x9E3779B9, 0xBB67AE85
)

// inverse32 is the inverse of an odd m modulo 2³² (Newton's iteration).
func inverse32(m uint32) uint32 {
	x := m // correct to 3 bits for odd m; each step doubles them
	for range 5 {
		x *= 2 - m*x
	}
	return x
}

// philoxInverse returns the counter that Philox4x32-10 under key maps to
// x: each round undone, last first (its products are by odd constants,
// invertible modulo 2³²).
func philoxInverse(x [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := x[0], x[1], x[2], x[3]
	inv0, inv1 := inverse32(philoxM0), inverse32(philoxM1)
	for r := uint32(9); r < 10; r-- {
		k0, k1 := key[0]+r*philoxW0, key[1]+r*philoxW1
		p2, p0 := c1*inv1, c3*inv0 // lo1 = M1·c2 and lo0 = M0·c0 of the round
		hi1, _ := bits.Mul32(philoxM1, p2)
		hi0, _ := bits.Mul32(philoxM0, p0)
		c0, c1, c2, c3 = p0, c0^hi1^k0, p2, c2^hi0^k1
	}
	return [4]uint32{c0, c1, c2, c3}
}

// streamOfWords returns a stream and an element index whose Philox block
// is the words x: any four words are some counter's under any key, and a
// counter is a block (its words 0 and 1), a step and a direction. Keys are
// tried until the block is small enough for an element index (< 2⁶¹).
func streamOfWords(x [4]uint32) (noise.Stream, int) {
	for seed := uint64(1); ; seed++ {
		c := philoxInverse(x, [2]uint32{uint32(seed), uint32(seed >> 32)})
		if c[1] < 1<<29 {
			return noise.Stream{Seed: seed, Step: c[2], Dir: c[3]}, 4 * int(uint64(c[1])<<32|uint64(c[0]))
		}
	}
}

// hostNormalWords is package noise's normals of the word pairs of words
// (an even count): each two pairs made a stream's block (streamOfWords)
// and drawn with noise.Stream.FillRange, on every core.
func hostNormalWords(words []uint32) []float32 {
	out := make([]float32, len(words)+2)
	w := append(words[:len(words):len(words)], 0, 0)
	blocks := len(words) / 4
	if len(words)%4 != 0 {
		blocks++
	}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for k := range workers {
		wg.Go(func() {
			for i := k; i < blocks; i += workers {
				s, e := streamOfWords([4]uint32(w[4*i : 4*i+4]))
				s.FillRange(out[4*i:4*i+4], e, noise.Normal, 1)
			}
		})
	}
	wg.Wait()
	return out[:len(words)]
}

// TestPhiloxInverse: the inverse's counter gives the words back.
func TestPhiloxInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		x := [4]uint32{rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()}
		key := [2]uint32{rng.Uint32(), rng.Uint32()}
		if got := noise.Philox4x32(philoxInverse(x, key), key); got != x {
			t.Fatalf("Philox of the inverse of %x under %x is %x", x, key, got)
		}
		s, e := streamOfWords(x)
		words := make([]uint32, 4)
		s.FillBits(words, e)
		if [4]uint32(words) != x {
			t.Fatalf("stream %+v at %d has the words %x, want %x", s, e, words, x)
		}
	}
}

// fullParamCase is one setting of full-parameter steps: an optimizer, the
// noise, the weights' storage and the grouping.
type fullParamCase struct {
	name    string
	opt     func() zo.Optimizer
	dist    noise.Dist
	bf16    bool
	grouped bool
	config  func() *model.Config // nil: fullParamConfig
}

// fullParamCases cover every rule of package update (ZO-SGD with momentum
// and weight decay, ZO-Adam with β1, R-AdaZO; MEAZO is plain SGD), every
// distribution, both storages.
var fullParamCases = []fullParamCase{
	{"meazo", func() zo.Optimizer { return zo.NewMEAZO(1e-3) }, noise.Normal, false, false, nil},
	{"zo-sgd/bf16", func() zo.Optimizer {
		o := zo.NewSGD(1e-2)
		o.Momentum, o.WeightDecay = 0.9, 0.01
		return o
	}, noise.Ternary, true, true, nil},
	{"zo-adam/bf16", func() zo.Optimizer { return zo.NewAdam(1e-3) }, noise.Rademacher, true, false, nil},
	{"radazo", func() zo.Optimizer { return zo.NewRAdaZO(1e-3) }, noise.Sphere, false, true, nil},
	// OPT-350m's shape: biases, LayerNorms, learned positions, project_in/out.
	{"fzoo/opt", func() zo.Optimizer { return zo.NewFZOO(1e-3) }, noise.Rademacher, false, true, optFullParamConfig},
}

// optFullParamConfig is a two-layer post-norm OPT model with narrower
// embeddings (project_in/out) and an untied LM head.
func optFullParamConfig() *model.Config {
	return &model.Config{Architecture: "OPTForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 16, WordEmbedDim: 16, PostNorm: true, NoFinalNorm: true,
		LayerNormEps: 1e-5, BOSTokenID: 2, EOSTokenIDs: []int{2}}
}

// fullParamConfig is a two-layer Qwen3 model (q/k norms: perturbed vectors)
// with an untied LM head.
func fullParamConfig() *model.Config {
	return &model.Config{Architecture: "Qwen3ForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6, QKNorm: true, BOSTokenID: -1, EOSTokenIDs: []int{2}}
}

// fullParamValues are the model's starting values: N(0, 0.2²), norms near 1.
func fullParamValues(name string, shape []int) ([]float32, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	rng := rand.New(rand.NewPCG(uint64(len(name)), uint64(name[len(name)-8])))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * 0.2)
		if len(shape) == 1 {
			v[i]++
		}
	}
	return v, nil
}

// recorder is the CPU's parameters with every update kept, to apply the
// same updates (the CPU's projected gradients) to another backend's.
type recorder struct {
	*fullparam.Params
	updates []recordedUpdate
}

type recordedUpdate struct {
	g  int
	u  zo.StoreUpdate
	ss float64
}

func (r *recorder) Update(g int, u zo.StoreUpdate) (float64, error) {
	ss, err := r.Params.Update(g, u)
	r.updates = append(r.updates, recordedUpdate{g, u, ss})
	return ss, err
}

// twoModels evaluates each variant on the CPU's model and on the CUDA
// one's, requires their losses to agree within the conformance tolerance,
// and returns the CPU's.
type twoModels struct {
	t        *testing.T
	cpu, dev *model.Model
	p        *fullparam.Params
	in       model.Input
	labels   []int
}

func (o *twoModels) Evaluate(_ [][]float32, vs []zo.Variant) ([]float64, error) {
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		mv[i] = o.p.Variant(v)
		switch {
		case v.Group == zo.Clean:
			mv[i].From = o.cpu.NumLayers
		case v.Group >= 0:
			mv[i].From = o.p.GroupLayer(v.Group)
		}
	}
	want, _, err := o.cpu.Losses(o.in, o.labels, model.Variant{}, mv)
	if err != nil {
		return nil, err
	}
	got, _, err := o.dev.Losses(o.in, o.labels, model.Variant{}, mv)
	if err != nil {
		return nil, err
	}
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= backendtest.Float32.Loss) {
			o.t.Errorf("variant %d: loss %.9g on cuda, %.9g on the CPU", i, got[i], want[i])
		}
	}
	return want, nil
}

// fullParameterSteps runs three full-parameter steps of case c with the
// CPU's model and dev's model reading the same variants (twoModels), and
// after each applies the CPU's updates to dev's weights, which must then
// be the CPU's bit for bit, and so must the optimizer's state at the end.
func fullParameterSteps(t *testing.T, dev *Backend, c fullParamCase) {
	cfg := fullParamConfig()
	if c.config != nil {
		cfg = c.config()
	}
	load := func(be *Backend) *model.Model {
		o := model.LoadOptions{BF16Weights: c.bf16, Unstacked: true, Backend: cpu.New(cpu.Options{Threads: 2})}
		if be != nil {
			o.Backend = be
		}
		m, err := model.FromValues(cfg, fullParamValues, o)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cm, dm := load(nil), load(dev)
	defer dm.Free()
	exclude := "model.layers.1.mlp.up_proj.weight"
	if cfg.IsOPT() {
		exclude = "model.decoder.layers.1.fc1.weight"
	}
	popts := fullparam.Options{Grouped: c.grouped, Exclude: []string{exclude}}
	pc, err := fullparam.New(cm, popts)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := fullparam.New(dm, popts)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Free()
	rec := &recorder{Params: pc}
	mode := zo.Joint
	if c.grouped {
		mode = zo.Grouped
	}
	eng, err := zo.NewStore(rec, c.opt(), zo.Config{Eps: 1e-3, Q: 2, Dist: c.dist, Seed: 17, Mode: mode, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		in, labels := fullParamBatch(uint64(step))
		if _, err := eng.Step(&twoModels{t, cm, dm, pc, in, labels}); err != nil {
			t.Fatal(err)
		}
		for _, r := range rec.updates {
			ss, err := pd.Update(r.g, r.u)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(ss-r.ss) > 1e-9*r.ss {
				t.Errorf("step %d, group %d: Σ Δθ² %.17g on cuda, %.17g on the CPU", step, r.g, ss, r.ss)
			}
		}
		rec.updates = nil
		sameWeights(t, step, cm, dm)
	}
	sameState(t, pc, pd)
}

// fullParamBatch is 3 sequences of 9 tokens, the last 3 supervised.
func fullParamBatch(seed uint64) (model.Input, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := model.Input{B: 3, T: 9, Tokens: make([]int, 27)}
	labels := make([]int, 27)
	for i := range in.Tokens {
		in.Tokens[i] = rng.IntN(96)
		labels[i] = -100
		if i%9 >= 6 {
			labels[i] = in.Tokens[i]
		}
	}
	return in, labels
}

// sameWeights requires every tensor of b to be a's, bit for bit.
func sameWeights(t *testing.T, step int, a, b *model.Model) {
	t.Helper()
	at, _ := a.Tensors()
	bt, _ := b.Tensors()
	for i := range at {
		x, y := readTensor(a, at[i]), readTensor(b, bt[i])
		if j := firstDiff(y, x); j >= 0 {
			t.Fatalf("after step %d: %s[%d] is %g on cuda, %g on the CPU", step, at[i].Name, j, y[j], x[j])
		}
	}
}

// sameState requires the optimizer's state of two runs, as saved, to be
// the same bytes.
func sameState(t *testing.T, a, b *fullparam.Params) {
	t.Helper()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "cpu.safetensors"), filepath.Join(dir, "cuda.safetensors")
	if err := a.SaveState(pa); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveState(pb); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(pa)
	y, _ := os.ReadFile(pb)
	if a.HasState() != b.HasState() || !bytes.Equal(x, y) {
		t.Fatalf("the optimizer's state differs (%d bytes on the CPU, %d on cuda)", len(x), len(y))
	}
}

// readTensor reads a tensor of m back from its backend.
func readTensor(m *model.Model, t model.Tensor) []float32 {
	be := m.Backend
	if t.Vector != nil {
		return be.ToHost(t.Vector)
	}
	ids := make([]int, t.Rows)
	for i := range ids {
		ids[i] = i
	}
	buf := be.Alloc(t.Rows * t.Cols)
	defer be.Free(buf)
	be.Rows(buf, t.Weight, ids)
	return be.ToHost(buf)
}
