package model

import (
	"fmt"
	"path/filepath"
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
// of query and value (PEFT's target_modules), one entry per layer, nil where
// a layer has none; and the classifier, which PEFT trains as a whole copy
// (modules_to_save), replacing the model's when not nil.
type ViTAdapter struct {
	Layers         []LayerAdapter
	Classifier     []float32 // classifier.weight [NumLabels][HiddenSize]
	ClassifierBias []float32 // classifier.bias [NumLabels]
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
	cfg, err := LoadViTConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	r, err := openCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer r.ck.Close()
	if be == nil {
		be = LoadOptions{}.backend()
	}
	m, err := buildViT(cfg, be, r.load)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	if unused := r.unused(nil); len(unused) > 0 {
		m.Free()
		return nil, fmt.Errorf("load model %s: the checkpoint holds tensors the config.json's %d-layer ViTForImageClassification has no use for (%s)",
			dir, cfg.NumLayers, strings.Join(unused[:min(3, len(unused))], ", "))
	}
	return m, nil
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
	for i := range c.NumLayers {
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
