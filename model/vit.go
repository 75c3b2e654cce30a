package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/tensor"
)

// ViT is transformers' ViTForImageClassification (modeling_vit.py), forward
// only: images cut into patches, each patch projected (the patch embedding
// convolution, whose stride is its kernel, as one GEMM over the patches),
// a CLS token in front, learned positions added; a pre-LayerNorm encoder
// (LayerNorm, attention over all tokens, residual add; LayerNorm, GELU MLP,
// residual add); a final LayerNorm; a linear classifier on the CLS token.
// A struct per module, as HF's; the weights live on Backend.
type ViT struct {
	Config     ViTConfig
	Backend    tensor.Backend
	Embed      ViTEmbeddings
	Layers     []ViTLayer
	Norm       ViTNorm   // vit.layernorm
	Classifier ViTLinear // classifier: NumLabels outputs
	// Adapter, when not nil, is applied by every forward pass: a PEFT LoRA
	// adapter's view (package lora makes it).
	Adapter *ViTAdapter
}

// ViTAdapter is what a PEFT LoRA adapter of a ViT changes: low-rank updates
// of an encoder layer's linear layers (PEFT's target_modules; the slots of
// ViTConfig.Projections: query, key, value, attention.output.dense,
// intermediate.dense, output.dense), one entry per layer, nil where a layer
// has none; and the classifier, which PEFT trains as a whole copy
// (modules_to_save), replacing the model's when not nil.
type ViTAdapter struct {
	Layers         []LayerAdapter
	Classifier     []float32 // classifier.weight [NumLabels][HiddenSize]
	ClassifierBias []float32 // classifier.bias [NumLabels]
}

// Projections lists the linear layers of a ViT encoder layer that a LoRA
// adapter may update, in the order the layer applies them (the canonical
// order of an adapter's parameters, docs/ALGORITHMS.md), each in the
// LayerAdapter slot of its place in a decoder layer: query, key and value
// in Q, K and V, attention.output.dense in O, intermediate.dense in Up,
// output.dense in Down (a ViT has no Gate). Module is the path within
// vit.encoder.layer.N; Name is the same without the self-attention's
// "attention.attention." (PEFT matches a target as the end of a module's
// path: "output.dense" names attention.output.dense too).
func (c *ViTConfig) Projections() []Projection {
	d, f := c.HiddenSize, c.IntermediateSize
	const a = "attention.attention."
	return []Projection{
		{Proj: ProjQ, Name: "query", Module: a + "query", In: d, Out: d},
		{Proj: ProjK, Name: "key", Module: a + "key", In: d, Out: d},
		{Proj: ProjV, Name: "value", Module: a + "value", In: d, Out: d},
		{Proj: ProjO, Name: "attention.output.dense", Module: "attention.output.dense", In: d, Out: d},
		{Proj: ProjUp, Name: "intermediate.dense", Module: "intermediate.dense", In: d, Out: f},
		{Proj: ProjDown, Name: "output.dense", Module: "output.dense", In: f, Out: d},
	}
}

// ViTEmbeddings turns images into the encoder's first hidden states.
type ViTEmbeddings struct {
	Patch     ViTLinear  // projection [hidden][channels·patch·patch] (the convolution's weight, flattened)
	CLS       tensor.Buf // cls_token [hidden]
	Positions tensor.Buf // position_embeddings [tokens][hidden]
}

// ViTLayer is one encoder layer (ViTLayer).
type ViTLayer struct {
	NormBefore ViTNorm   // layernorm_before
	Q, K, V    ViTLinear // attention.attention.{query,key,value}
	O          ViTLinear // attention.output.dense
	NormAfter  ViTNorm   // layernorm_after
	Up         ViTLinear // intermediate.dense
	Down       ViTLinear // output.dense
}

// Linear is the layer's linear layer in slot p (ViTConfig.Projections),
// nil for a slot a ViT layer lacks (ProjGate).
func (l *ViTLayer) Linear(p Proj) *ViTLinear {
	switch p {
	case ProjQ:
		return &l.Q
	case ProjK:
		return &l.K
	case ProjV:
		return &l.V
	case ProjO:
		return &l.O
	case ProjUp:
		return &l.Up
	case ProjDown:
		return &l.Down
	}
	return nil
}

// ViTLinear is an nn.Linear: W [out][in], packed, and its bias (nil for
// q/k/v without qkv_bias).
type ViTLinear struct {
	W    tensor.Weight
	B    tensor.Buf
	Out  int
	Name string // the HF module's name, for LoRA and for errors
}

// ViTNorm is an nn.LayerNorm's weight and bias.
type ViTNorm struct{ W, B tensor.Buf }

// LoadViT reads a ViTForImageClassification checkpoint (config.json and
// safetensors, sharded or not) onto backend be (the CPU when nil). A tensor
// missing or of the wrong shape, and a tensor the model has no use for, are
// errors naming it.
func LoadViT(dir string, be tensor.Backend) (*ViT, error) {
	return LoadViTWith(dir, ViTLoadOptions{Backend: be})
}

// ViTLoadOptions says how LoadViTWith loads a ViT.
type ViTLoadOptions struct {
	Backend tensor.Backend // the CPU when nil
	// NumLabels is the number of classes the caller needs (0: the
	// checkpoint's). A classifier of another size is an error; a ViTModel
	// checkpoint (Headless) gets a fresh classifier of this size.
	NumLabels int
	// HeadSeed draws a fresh classifier's weights (freshClassifier says how).
	HeadSeed uint64
}

// poolerPrefixes name ViTModel's pooler, which
// ViTForImageClassification does not have (add_pooling_layer=False):
// from_pretrained ignores its tensors, and so does the loader, without
// reading them.
var poolerPrefixes = []string{"pooler.", "vit.pooler."}

// LoadViTWith reads a ViT image classifier as transformers'
// ViTForImageClassification.from_pretrained(dir, num_labels=NumLabels)
// does: from a ViTForImageClassification checkpoint, or from a ViTModel
// one (google/vit-base-patch16-224-in21k: its tensors named without the
// "vit." prefix, which is added, its pooler skipped unread, and a fresh
// classifier made, as freshClassifier says).
func LoadViTWith(dir string, opts ViTLoadOptions) (*ViT, error) {
	cfg, err := LoadViTConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Headless && opts.NumLabels > 0:
		cfg.NumLabels = opts.NumLabels
	case cfg.Headless:
		return nil, fmt.Errorf("load model %s: config.json is a ViTModel (no classifier): the number of classes must be given", dir)
	case opts.NumLabels > 0 && cfg.NumLabels != opts.NumLabels:
		return nil, fmt.Errorf("load model %s: config.json gives %d classes (id2label, else num_labels, else transformers' 2), but the task has %d: the classifier does not fit the task", dir, cfg.NumLabels, opts.NumLabels)
	}
	r, err := openCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer r.ck.Close()
	if cfg.Headless {
		r.name = func(name string) string {
			if _, ok := r.ck.Info(name); !ok {
				return strings.TrimPrefix(name, "vit.") // a ViTModel's own names
			}
			return name
		}
	}
	be := opts.Backend
	if be == nil {
		be = LoadOptions{}.backend()
	}
	m, err := buildViT(cfg, be, func(name string, shape []int) ([]float32, error) {
		if cfg.Headless && strings.HasPrefix(name, "classifier.") {
			return freshClassifier(cfg, opts.HeadSeed, name), nil
		}
		return r.load(name, shape)
	})
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	pooler := func(n string) bool {
		return slices.ContainsFunc(poolerPrefixes, func(p string) bool { return strings.HasPrefix(n, p) })
	}
	if unused := r.unused(pooler); len(unused) > 0 {
		m.Free()
		return nil, fmt.Errorf("load model %s: the checkpoint holds tensors the config.json's %d-layer ViTForImageClassification has no use for (%s)",
			dir, cfg.NumLayers, strings.Join(unused[:min(3, len(unused))], ", "))
	}
	return m, nil
}

// freshClassifier is the named tensor of a new classifier (weight
// [NumLabels][HiddenSize] or bias [NumLabels]) as transformers' ViT
// _init_weights makes an nn.Linear: the weight from a normal of standard
// deviation initializer_range truncated at ±2 (torch.nn.init.trunc_normal_:
// a uniform draw mapped through the inverse error function), the bias zero.
// The draw is ours, from seed (a PCG stream of its own): the same
// distribution as torch's, not its numbers (docs/MODELS.md).
func freshClassifier(c *ViTConfig, seed uint64, name string) []float32 {
	if name == "classifier.bias" {
		return make([]float32, c.NumLabels)
	}
	w := make([]float32, c.NumLabels*c.HiddenSize)
	const lo, hi = -2.0, 2.0 // trunc_normal_'s default bounds a and b
	std := c.InitializerRange
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	l, u := 2*cdf(lo/std)-1, 2*cdf(hi/std)-1
	rng := rand.New(rand.NewPCG(seed, 0xc1a55))
	for i := range w {
		x := math.Erfinv(l+(u-l)*rng.Float64()) * std * math.Sqrt2
		w[i] = float32(min(max(x, lo), hi))
	}
	return w
}

// buildViT assembles a ViT on be from named tensors (HF state-dict names
// and shapes).
func buildViT(c *ViTConfig, be tensor.Backend, load weightLoader) (_ *ViT, err error) {
	defer tensor.Recover(&err)
	m := &ViT{Config: *c, Backend: be}
	b := &builder{be: be, load: load}
	d, f, p := c.HiddenSize, c.IntermediateSize, c.PatchSize
	linear := func(name string, out, in int, bias bool) ViTLinear {
		l := ViTLinear{W: b.matrix(name+".weight", out, in), Out: out, Name: name}
		if bias {
			l.B = b.vector(name+".bias", out)
		}
		return l
	}
	norm := func(name string) ViTNorm { return ViTNorm{b.vector(name+".weight", d), b.vector(name+".bias", d)} }
	const e = "vit.embeddings."
	m.Embed.Patch = ViTLinear{W: b.shaped(e+"patch_embeddings.projection.weight", []int{d, c.NumChannels, p, p}, d, c.NumChannels*p*p),
		B: b.vector(e+"patch_embeddings.projection.bias", d), Out: d, Name: e + "patch_embeddings.projection"}
	m.Embed.CLS = b.buf(e+"cls_token", 1, 1, d)
	m.Embed.Positions = b.buf(e+"position_embeddings", 1, c.Tokens(), d)
	for i := 0; i < c.NumLayers && b.err == nil; i++ { // a missing tensor ends the build: a config of 65536 layers made 441 MB of empty layers first
		lp := fmt.Sprintf("vit.encoder.layer.%d.", i)
		a := lp + "attention.attention."
		m.Layers = append(m.Layers, ViTLayer{
			NormBefore: norm(lp + "layernorm_before"),
			Q:          linear(a+"query", d, d, c.QKVBias),
			K:          linear(a+"key", d, d, c.QKVBias),
			V:          linear(a+"value", d, d, c.QKVBias),
			O:          linear(lp+"attention.output.dense", d, d, true),
			NormAfter:  norm(lp + "layernorm_after"),
			Up:         linear(lp+"intermediate.dense", f, d, true),
			Down:       linear(lp+"output.dense", d, f, true),
		})
	}
	m.Norm = norm("vit.layernorm")
	m.Classifier = linear("classifier", c.NumLabels, d, true)
	if b.err != nil {
		m.Free()
		return nil, b.err
	}
	return m, nil
}

// shaped reads a tensor of the given shape and packs it as a rows×cols
// matrix (its row-major layout read as one): the patch convolution's
// [out][channels][kh][kw] weight as [out][channels·kh·kw].
func (b *builder) shaped(name string, shape []int, rows, cols int) tensor.Weight {
	if b.err != nil {
		return nil
	}
	v, err := b.load(name, shape)
	if b.err = err; err != nil {
		return nil
	}
	return b.be.Pack(v, rows, cols, false)
}

// buf reads a tensor of the given shape into a device buffer.
func (b *builder) buf(name string, shape ...int) tensor.Buf {
	if b.err != nil {
		return nil
	}
	v, err := b.load(name, shape)
	if b.err = err; err != nil {
		return nil
	}
	return b.be.FromHost(v)
}

// Free releases the model's weights on its backend.
func (m *ViT) Free() {
	be := m.Backend
	var bufs []tensor.Buf
	linears := []ViTLinear{m.Embed.Patch, m.Classifier}
	norms := []ViTNorm{m.Norm}
	for _, l := range m.Layers {
		linears = append(linears, l.Q, l.K, l.V, l.O, l.Up, l.Down)
		norms = append(norms, l.NormBefore, l.NormAfter)
	}
	for _, l := range linears {
		if l.W != nil {
			be.FreeWeight(l.W)
		}
		bufs = append(bufs, l.B)
	}
	for _, n := range norms {
		bufs = append(bufs, n.W, n.B)
	}
	bufs = append(bufs, m.Embed.CLS, m.Embed.Positions)
	for _, x := range bufs {
		if x != nil {
			be.Free(x)
		}
	}
	*m = ViT{Config: m.Config, Backend: be}
}

// NewRandomViT builds a ViT of config c with random weights on be (the CPU
// when nil), for benchmarks at full size without a checkpoint: drawn as
// NewRandom draws a decoder's (LayerNorm scales near 1, every other tensor
// uniform with standard deviation std), the same for any thread count.
func NewRandomViT(c *ViTConfig, seed uint64, std float64, be tensor.Backend) (*ViT, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("random vit: %w", err)
	}
	if be == nil {
		be = LoadOptions{}.backend()
	}
	return buildViT(c, be, randomLoader(seed, std, false))
}
