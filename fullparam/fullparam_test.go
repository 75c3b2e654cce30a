package fullparam

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
	"github.com/meazo-go/meazo/zo"
)

// tinyConfig is a two-layer model of the given architecture
// ("OPTForCausalLM-postnorm": OPT-350m's shape, with project_in/out).
func tinyConfig(arch string, tied bool) *model.Config {
	if strings.HasPrefix(arch, "OPTForCausalLM") {
		post := arch == "OPTForCausalLM-postnorm"
		c := &model.Config{Architecture: "OPTForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
			NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 16, WordEmbedDim: 32, LayerNormEps: 1e-5, TieEmbeddings: tied,
			BOSTokenID: 2, EOSTokenIDs: []int{2}, PostNorm: post, NoFinalNorm: post}
		if post {
			c.WordEmbedDim = 16
		}
		return c
	}
	c := &model.Config{Architecture: arch, VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: tied,
		BOSTokenID: -1, EOSTokenIDs: []int{2}}
	c.QKNorm = arch == "Qwen3ForCausalLM"
	return c
}

// trainedNames are a tensor that a test excludes from training and one
// that trains, in a config's naming.
func trainedNames(c *model.Config) (excluded, trained string) {
	if c.IsOPT() {
		return "model.decoder.layers.0.fc1.weight", "model.decoder.layers.0.fc2.bias"
	}
	return "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.gate_proj.weight"
}

// values returns a model's random starting values by tensor name.
func values(c *model.Config, seed uint64) func(string, []int) ([]float32, error) {
	return func(name string, shape []int) ([]float32, error) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		rng := rand.New(rand.NewPCG(seed, uint64(len(name))*31+uint64(name[len(name)-8])))
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.2)
			if len(shape) == 1 {
				v[i] += 1 // a norm's weight, near 1
			}
		}
		return v, nil
	}
}

// batch is a batch of 4 sequences of 7 tokens, the last 3 supervised.
func batch(seed uint64) (model.Input, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := model.Input{B: 4, T: 7, Tokens: make([]int, 28)}
	labels := make([]int, 28)
	for i := range in.Tokens {
		in.Tokens[i] = rng.IntN(96)
		labels[i] = -100
		if i%7 >= 4 {
			labels[i] = in.Tokens[i]
		}
	}
	return in, labels
}

// storeObjective evaluates the engine's variants on the model's own
// weights, perturbed as they are read (prefix caching when grouped).
type storeObjective struct {
	m      *model.Model
	p      *Params
	in     model.Input
	labels []int
}

func (o *storeObjective) Evaluate(_ [][]float32, vs []zo.Variant) ([]float64, error) {
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		mv[i] = o.p.Variant(v)
		switch {
		case v.Group == zo.Clean:
			mv[i].From = o.m.NumLayers
		case v.Group >= 0:
			mv[i].From = o.p.GroupLayer(v.Group)
		}
	}
	l, _, err := o.m.Losses(o.in, o.labels, model.Variant{}, mv)
	return l, err
}

// hostObjective is the reference: θ as host slices, each variant's loss
// from Forward on a model built from its values.
type hostObjective struct {
	c      *model.Config
	init   func(string, []int) ([]float32, error)
	p      *Params // the layout (which tensor sits where in which group)
	in     model.Input
	labels []int
}

func (o *hostObjective) modelOf(params [][]float32) *model.Model {
	byName := map[string][]float32{}
	for g, gr := range o.p.groups {
		for j, i := range gr.tensors {
			t := o.p.tensors[i]
			byName[t.Name] = params[g][gr.offsets[j] : gr.offsets[j]+int64(t.Size())]
		}
	}
	m, err := model.FromValues(o.c, func(name string, shape []int) ([]float32, error) {
		if v, ok := byName[name]; ok {
			return slices.Clone(v), nil
		}
		return o.init(name, shape)
	}, model.LoadOptions{Backend: cpu.New(cpu.Options{Threads: 1}), Unstacked: true})
	if err != nil {
		panic(err)
	}
	return m
}

func (o *hostObjective) Evaluate(_ [][]float32, vs []zo.Variant) ([]float64, error) {
	losses := make([]float64, len(vs))
	for i, v := range vs {
		out, err := o.modelOf(v.Params).Forward(o.in, model.Options{Labels: o.labels})
		if err != nil {
			return nil, err
		}
		losses[i] = out.Loss
	}
	return losses, nil
}

// hostParams lays the model's trained tensors out as the engine's host
// slices, group by group, as Params counts their elements.
// hostParams is p's θ as host slices, and the spans of its vectors (norm
// weights, biases), which weight decay leaves alone.
func hostParams(p *Params, init func(string, []int) ([]float32, error)) ([][]float32, []zo.Span) {
	out := make([][]float32, len(p.groups))
	var vectors []zo.Span
	for g, gr := range p.groups {
		for _, i := range gr.tensors {
			t := p.tensors[i]
			shape := []int{t.Rows, t.Cols}
			if t.Vector != nil {
				shape = []int{t.Cols}
				vectors = append(vectors, zo.Span{Group: g, Lo: len(out[g]), Hi: len(out[g]) + t.Cols})
			}
			v, _ := init(t.Name, shape)
			out[g] = append(out[g], v...)
		}
	}
	return out, vectors
}

// TestStoreStepIsHostStep: full-parameter steps on the model's own weights
// (the engine over Params, the backend perturbing weights as it reads them
// and updating them in place) give, bit for bit, the losses and weights of
// the engine's host path over the same θ as slices, with every variant's
// loss computed by Forward on a model built from its values: every
// optimizer, joint and grouped, tied and untied heads, with some tensors
// excluded; ZO-SGD's weight decay sparing norm weights and biases, as
// MeZO's update does.
func TestStoreStepIsHostStep(t *testing.T) {
	opts := []struct {
		name string
		opt  func() zo.Optimizer
		q    int
		dist noise.Dist
	}{
		{"meazo", func() zo.Optimizer { return zo.NewMEAZO(1e-3) }, 1, noise.Normal},
		{"zo-sgd", func() zo.Optimizer {
			o := zo.NewSGD(1e-2)
			o.Momentum, o.WeightDecay = 0.9, 0.01
			return o
		}, 2, noise.Normal},
		{"zo-adam", func() zo.Optimizer { return zo.NewAdam(1e-3) }, 1, noise.Normal},
		{"radazo", func() zo.Optimizer { return zo.NewRAdaZO(1e-3) }, 1, noise.Ternary},
		{"fzoo", func() zo.Optimizer { return zo.NewFZOO(1e-3) }, 3, noise.Rademacher},
	}
	for _, o := range opts {
		for _, grouped := range []bool{false, true} {
			for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM", "OPTForCausalLM", "OPTForCausalLM-postnorm"} {
				name := fmt.Sprintf("%s/grouped=%v/%s", o.name, grouped, arch)
				t.Run(name, func(t *testing.T) {
					c := tinyConfig(arch, arch != "LlamaForCausalLM")
					excluded, _ := trainedNames(c)
					storeStepIsHostStep(t, c, o.opt, o.q, o.dist, grouped, []string{excluded})
				})
			}
		}
	}
}

// TestStoreStepWithoutEmbeddings: with the embeddings frozen (MeZO's and
// FZOO's option), a step still perturbs every trained layer: OPT lists its
// final norm (and OPT-350m's project_out) before the decoder layers, and
// the one group of a joint run once started its variants where its first
// tensor acts, after the last layer, so that the layers' perturbations were
// never evaluated.
func TestStoreStepWithoutEmbeddings(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		for _, arch := range []string{"LlamaForCausalLM", "OPTForCausalLM", "OPTForCausalLM-postnorm"} {
			t.Run(fmt.Sprintf("grouped=%v/%s", grouped, arch), func(t *testing.T) {
				c := tinyConfig(arch, false)
				exclude := []string{"model.embed_tokens.weight"}
				if c.IsOPT() {
					exclude = []string{"model.decoder.embed_*", "model.decoder.project_in.weight"}
					if arch == "OPTForCausalLM" {
						exclude = exclude[:1]
					}
				}
				storeStepIsHostStep(t, c, func() zo.Optimizer { return zo.NewMEAZO(1e-3) }, 1, noise.Normal, grouped, exclude)
			})
		}
	}
}

func storeStepIsHostStep(t *testing.T, c *model.Config, newOpt func() zo.Optimizer, q int, dist noise.Dist, grouped bool, exclude []string) {
	init := values(c, 3)
	m, err := model.FromValues(c, init, model.LoadOptions{Backend: cpu.New(cpu.Options{Threads: 2}), Unstacked: true})
	if err != nil {
		t.Fatal(err)
	}
	_, trained := trainedNames(c)
	p, err := New(m, Options{Exclude: exclude, Grouped: grouped})
	if err != nil {
		t.Fatal(err)
	}
	mode := zo.Joint
	if grouped {
		mode = zo.Grouped
	}
	cfg := zo.Config{Eps: 1e-3, Q: q, Dist: dist, Seed: 17, Mode: mode, Workers: 2}
	store, err := zo.NewStore(p, newOpt(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	theta, vectors := hostParams(p, init)
	cfg.NoDecay = vectors
	host, err := zo.New(theta, newOpt(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		in, labels := batch(uint64(step))
		got, err := store.Step(&storeObjective{m, p, in, labels})
		if err != nil {
			t.Fatal(err)
		}
		want, err := host.Step(&hostObjective{c, init, p, in, labels})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Losses, want.Losses) {
			t.Fatalf("step %d: losses %v, the host path's %v", step, got.Losses, want.Losses)
		}
		if math.Abs(got.UpdateNorm-want.UpdateNorm) > 1e-9*want.UpdateNorm || want.UpdateNorm == 0 {
			t.Errorf("step %d: update norm %.17g, the host path's %.17g", step, got.UpdateNorm, want.UpdateNorm)
		}
	}
	// The weights on the backend are the host's θ, and the excluded tensor
	// is as it was.
	ref := (&hostObjective{c, init, p, model.Input{}, nil}).modelOf(theta)
	mt, _ := m.Tensors()
	rt, _ := ref.Tensors()
	for i := range mt {
		a, b := readTensor(m, mt[i]), readTensor(ref, rt[i])
		if j := firstDiff(a, b); j >= 0 {
			t.Fatalf("%s[%d] = %v on the backend, %v on the host", mt[i].Name, j, a[j], b[j])
		}
	}
	if !slices.Contains(p.Tensors(), trained) || slices.ContainsFunc(p.Tensors(), func(name string) bool { return matches(exclude, name) }) {
		t.Errorf("trained tensors %v (excluded %q)", p.Tensors(), exclude)
	}
}

// readTensor reads a tensor back from the model's backend.
func readTensor(m *model.Model, t model.Tensor) []float32 {
	be := m.Backend
	if t.Vector != nil {
		return slices.Clone(be.ToHost(t.Vector))
	}
	ids := make([]int, t.Rows)
	for i := range ids {
		ids[i] = i
	}
	buf := be.Alloc(t.Rows * t.Cols)
	be.Rows(buf, t.Weight, ids)
	return slices.Clone(be.ToHost(buf))
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

var _ tensor.Trainer = (*cpu.Backend)(nil)

// TestGroupsPerLayer: grouped, a model has one group for what acts before
// its first layer, one per layer, and one for what acts after the last,
// whatever order its tensors are listed in: OPT-350m's shape lists
// project_out (after the layers) between the embeddings and project_in
// (before them), which made two groups of the embeddings' side.
func TestGroupsPerLayer(t *testing.T) {
	for _, tc := range []struct {
		arch string
		want []int // each group's GroupAt
	}{
		{"LlamaForCausalLM", []int{-1, 0, 1, 2}},
		{"OPTForCausalLM", []int{-1, 2, 0, 1}}, // the final norm is listed before the layers
		{"OPTForCausalLM-postnorm", []int{-1, 2, 0, 1}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			c := tinyConfig(tc.arch, true)
			m, err := model.FromValues(c, values(c, 1), model.LoadOptions{Backend: cpu.New(cpu.Options{Threads: 1}), Unstacked: true})
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(m, Options{Grouped: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for g := range len(p.Dims()) {
				got = append(got, p.GroupAt(g))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("groups at layers %v, want %v", got, tc.want)
			}
		})
	}
}
