package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/tensor"
)

// Logits runs the model on n images' pixel_values ([n][channels][side]
// [side], as ViTImageProcessor makes them) and returns the classifier's
// logits [n][NumLabels].
func (m *ViT) Logits(pixels []float32, n int) (logits []float32, err error) {
	defer tensor.Recover(&err)
	im, err := m.Images(pixels, n)
	if err != nil {
		return nil, err
	}
	defer im.Free()
	return m.LogitsOf(im)
}

// LogitsOf is Logits on images already on the model's backend.
func (m *ViT) LogitsOf(im *ViTImages) (logits []float32, err error) {
	defer tensor.Recover(&err)
	x, err := m.encode(im, nil)
	if err != nil {
		return nil, err
	}
	be := m.Backend
	defer be.Free(x)
	out := m.classify(x, im.n)
	defer be.Free(out)
	return be.ToHost(out), nil
}

// Loss is the mean cross-entropy of the logits of n images against their
// classes (ViTForImageClassification's loss for integer labels), in
// float64, with the logits.
func (m *ViT) Loss(pixels []float32, n int, labels []int) (loss float64, logits []float32, err error) {
	defer tensor.Recover(&err)
	if err := m.checkLabels(labels, n); err != nil {
		return 0, nil, err
	}
	im, err := m.Images(pixels, n)
	if err != nil {
		return 0, nil, err
	}
	defer im.Free()
	return m.LossOf(im, labels)
}

// LossOf is Loss on images already on the model's backend: a ZO step's
// variants (train's objective) share one upload of the mini-batch.
func (m *ViT) LossOf(im *ViTImages, labels []int) (loss float64, logits []float32, err error) {
	defer tensor.Recover(&err)
	n := im.n
	if err := m.checkLabels(labels, n); err != nil {
		return 0, nil, err
	}
	x, err := m.encode(im, nil)
	if err != nil {
		return 0, nil, err
	}
	be := m.Backend
	defer be.Free(x)
	out := m.classify(x, n)
	defer be.Free(out)
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	for _, l := range be.CrossEntropy(out, m.Config.NumLabels, rows, labels) {
		loss += l
	}
	return loss / float64(n), be.ToHost(out), nil
}

// checkLabels refuses labels that are not one class of the model's per
// image of n.
func (m *ViT) checkLabels(labels []int, n int) error {
	if len(labels) != n {
		return fmt.Errorf("vit loss: %d labels for %d images", len(labels), n)
	}
	for i, l := range labels {
		if l < 0 || l >= m.Config.NumLabels {
			return fmt.Errorf("vit loss: image %d's label %d is not one of the %d classes", i, l, m.Config.NumLabels)
		}
	}
	return nil
}

// ViTImages is a mini-batch of images on a ViT's backend, cut into its
// patches (ViTConfig.patches), for any number of forwards: on a GPU the
// cut and the upload (19 MB of pixel values for 32 images at 224×224, a
// synchronous copy from pageable memory) are host time during which the
// device waits, so a ZO step's variants share one.
type ViTImages struct {
	patches tensor.Buf // [n·Patches][channels·patch·patch]
	n       int
	be      tensor.Backend
	// The geometry they were cut for: another model's (another patch size
	// for the same pixels) has as many values in another order.
	channels, side, patch int
}

// Images cuts n images' pixel_values ([n][channels][side][side]) into
// patches and copies them to the model's backend; Free releases them.
func (m *ViT) Images(pixels []float32, n int) (im *ViTImages, err error) {
	defer tensor.Recover(&err)
	c := &m.Config
	if n <= 0 || len(pixels) != n*c.PixelsPerImage() {
		return nil, fmt.Errorf("vit: %d pixel values for %d images of %d×%d×%d", len(pixels), n, c.NumChannels, c.ImageSize, c.ImageSize)
	}
	return &ViTImages{patches: m.Backend.FromHost(c.patches(pixels, n)), n: n, be: m.Backend,
		channels: c.NumChannels, side: c.ImageSize, patch: c.PatchSize}, nil
}

// Len is the number of images.
func (im *ViTImages) Len() int { return im.n }

// Free releases the images' device memory (once; later calls do nothing).
// A failed device's error is the forwards' to report, not Free's.
func (im *ViTImages) Free() {
	if im.patches == nil {
		return
	}
	p := im.patches
	im.patches = nil
	var err error
	defer tensor.Recover(&err)
	im.be.Free(p)
}

// encode returns the encoder's output [n·tokens][hidden] before the final
// LayerNorm; keep, if not nil, sees the hidden states before each layer and
// after the last (HF's hidden_states).
func (m *ViT) encode(im *ViTImages, keep func(l int, x tensor.Buf)) (tensor.Buf, error) {
	c, n := &m.Config, im.n
	switch {
	case im.patches == nil:
		return nil, fmt.Errorf("vit: images used after Free")
	case im.be != m.Backend:
		return nil, fmt.Errorf("vit: images uploaded to another backend than the model's")
	case im.channels != c.NumChannels || im.side != c.ImageSize || im.patch != c.PatchSize:
		return nil, fmt.Errorf("vit: images cut for another model (%d channels of %d×%d in patches of %d; this model's: %d of %d×%d in %d)",
			im.channels, im.side, im.side, im.patch, c.NumChannels, c.ImageSize, c.ImageSize, c.PatchSize)
	}
	if err := m.checkAdapter(); err != nil {
		return nil, err
	}
	x := m.embed(im)
	s := m.newScratch(n * c.Tokens())
	defer s.free(m.Backend)
	for l := range m.Layers {
		if keep != nil {
			keep(l, x)
		}
		m.layer(l, x, n, s)
	}
	if keep != nil {
		keep(len(m.Layers), x)
	}
	return x, nil
}

// patches cuts n images [n][C][side][side] into their patches, one row
// [C·p·p] per patch in the convolution's weight order (channel, row,
// column), the patches of an image row by row as the convolution's output
// is flattened. The images are cut side by side (a batch of 32 at 224×224
// is 19 MB, host time on every step during which a GPU waits for them).
func (c *ViTConfig) patches(pixels []float32, n int) []float32 {
	p, side, grid := c.PatchSize, c.ImageSize, c.ImageSize/c.PatchSize
	width := c.NumChannels * p * p
	per := c.Patches() * width // values per image, as many as its pixels
	out := make([]float32, n*per)
	cut := func(img int) {
		im, dst := pixels[img*c.PixelsPerImage():], out[img*per:]
		for gy := range grid {
			for gx := range grid {
				at := (gy*grid + gx) * width
				for ch := range c.NumChannels {
					for y := range p {
						src := ch*side*side + (gy*p+y)*side + gx*p
						copy(dst[at:at+p], im[src:src+p])
						at += p
					}
				}
			}
		}
	}
	parallel.For(n, 0, cut)
	return out
}

// embed is ViTEmbeddings: the patches' projection and bias, the CLS token
// in front of each image's patches, the positions added.
func (m *ViT) embed(im *ViTImages) tensor.Buf {
	be, c, n := m.Backend, &m.Config, im.n
	d, np, t := c.HiddenSize, n*c.Patches(), c.Tokens()
	rows := be.Alloc((np + 1) * d) // the patch embeddings, then the CLS token
	m.Embed.Patch.apply(be, rows.Slice(0, np*d), im.patches, np)
	be.Copy(rows.Slice(np*d, (np+1)*d), m.Embed.CLS)
	ids := make([]int, 0, n*t)
	for img := range n {
		ids = append(ids, np)
		for k := range c.Patches() {
			ids = append(ids, img*c.Patches()+k)
		}
	}
	x := be.Alloc(n * t * d)
	be.Gather(x, rows, d, ids)
	be.Free(rows)
	be.AddBias(x, m.Embed.Positions, n, t*d) // the same positions for every image
	return x
}

// apply computes y [rows][Out] = x·Wᵀ + b.
func (l *ViTLinear) apply(be tensor.Backend, y, x tensor.Buf, rows int) {
	be.MatMul(y, x, rows, l.W)
	if l.B != nil {
		be.AddBias(y, l.B, rows, l.Out)
	}
}

// applyGELU computes y = GELU(x·Wᵀ + b): apply then GELU, the bias added
// in the activation's pass where the backend fuses them (tensor.BiasFuser),
// with the same bits.
func (l *ViTLinear) applyGELU(be tensor.Backend, y, x tensor.Buf, rows int) {
	if f, ok := be.(tensor.BiasFuser); ok && l.B != nil {
		be.MatMul(y, x, rows, l.W)
		f.AddBiasGELU(y, l.B, rows, l.Out)
		return
	}
	l.apply(be, y, x, rows)
	be.GELU(y)
}

// addTo adds x·Wᵀ + b to r [rows][Out] (the residual), the bias added to
// the products first: apply into y then Add(r, y), the bias added in the
// residual's pass where the backend fuses them (tensor.BiasFuser), with the
// same bits; y is scratch.
func (l *ViTLinear) addTo(be tensor.Backend, r, y, x tensor.Buf, rows int) {
	if f, ok := be.(tensor.BiasFuser); ok && l.B != nil {
		be.MatMul(y, x, rows, l.W)
		f.AddBiasResidual(r, y, l.B, rows, l.Out)
		return
	}
	l.apply(be, y, x, rows)
	be.Add(r, y)
}

// vitScratch is a forward's activation buffers, which its layers share
// (each layer writes them whole before it reads them): h, q, k and v of
// n·tokens rows of the hidden size, u of the MLP's. One set per forward
// instead of one per layer: on the CPU each is a new zeroed slice, 2.7 % of
// a ViT-B/16 step's time in clearing memory.
type vitScratch struct{ h, q, k, v, u tensor.Buf }

func (m *ViT) newScratch(rows int) *vitScratch {
	be, d := m.Backend, m.Config.HiddenSize
	return &vitScratch{be.Alloc(rows * d), be.Alloc(rows * d), be.Alloc(rows * d), be.Alloc(rows * d), be.Alloc(rows * m.Config.IntermediateSize)}
}

func (s *vitScratch) free(be tensor.Backend) { be.Free(s.h, s.q, s.k, s.v, s.u) }

// layer is ViTLayer on x [n·tokens][hidden], in place: x += attention(
// LayerNorm(x)); x += MLP(LayerNorm(x)), each branch's output projection
// and bias rounded before the residual add, as HF adds them.
func (m *ViT) layer(li int, x tensor.Buf, n int, s *vitScratch) {
	m.attention(li, x, n, s)
	m.mlp(li, x, n, s)
}

// attention is x += O(attention(Q, K, V of LayerNorm(x))), LoRA's terms
// added to the projections the adapter updates (q, k and v before the
// attention, o after it).
func (m *ViT) attention(li int, x tensor.Buf, n int, s *vitScratch) {
	l, be, c := &m.Layers[li], m.Backend, &m.Config
	rows, hd := n*c.Tokens(), c.HeadDim()
	be.LayerNorm(s.h, x, l.NormBefore.W, l.NormBefore.B, rows, c.HiddenSize, c.LayerNormEps)
	l.Q.apply(be, s.q, s.h, rows)
	l.K.apply(be, s.k, s.h, rows)
	l.V.apply(be, s.v, s.h, rows)
	a := m.layerAdapter(li)
	if a != nil {
		m.addLoRA(s.q, s.h, rows, a.Q)
		m.addLoRA(s.k, s.h, rows, a.K)
		m.addLoRA(s.v, s.h, rows, a.V)
	}
	be.EncoderAttention(s.h, s.q, s.k, s.v, n, c.Tokens(), c.NumHeads, hd, float32(1/math.Sqrt(float64(hd))))
	if a == nil || a.O == nil {
		l.O.addTo(be, x, s.q, s.h, rows)
		return
	}
	l.O.apply(be, s.q, s.h, rows) // the LoRA term is added between the bias and the residual
	m.addLoRA(s.q, s.h, rows, a.O)
	be.Add(x, s.q)
}

// mlp is x += Down(GELU(Up(LayerNorm(x)))), LoRA's terms added to Up
// (before the GELU) and Down, as PEFT adds them to each nn.Linear's output.
func (m *ViT) mlp(li int, x tensor.Buf, n int, s *vitScratch) {
	l, be, c := &m.Layers[li], m.Backend, &m.Config
	rows := n * c.Tokens()
	a := m.layerAdapter(li)
	be.LayerNorm(s.h, x, l.NormAfter.W, l.NormAfter.B, rows, c.HiddenSize, c.LayerNormEps)
	if a == nil || a.Up == nil {
		l.Up.applyGELU(be, s.u, s.h, rows)
	} else {
		l.Up.apply(be, s.u, s.h, rows) // the LoRA term is added between the bias and the GELU
		m.addLoRA(s.u, s.h, rows, a.Up)
		be.GELU(s.u)
	}
	if a == nil || a.Down == nil {
		l.Down.addTo(be, x, s.q, s.u, rows)
		return
	}
	l.Down.apply(be, s.q, s.u, rows)
	m.addLoRA(s.q, s.u, rows, a.Down)
	be.Add(x, s.q)
}

// classify is the final LayerNorm and the classifier on each image's CLS
// token: logits [n][NumLabels].
func (m *ViT) classify(x tensor.Buf, n int) tensor.Buf {
	be, c := m.Backend, &m.Config
	d := c.HiddenSize
	cls := make([]int, n)
	for i := range cls {
		cls[i] = i * c.Tokens()
	}
	h := be.Alloc(n * d)
	defer be.Free(h)
	be.Gather(h, x, d, cls)
	be.LayerNorm(h, h, m.Norm.W, m.Norm.B, n, d, c.LayerNormEps)
	out := be.Alloc(n * c.NumLabels)
	if a := m.Adapter; a != nil && a.Classifier != nil {
		w, b := be.FromHost(a.Classifier), be.FromHost(a.ClassifierBias)
		be.MatMulNT(out, h, w, n, c.NumLabels, d)
		be.AddBias(out, b, n, c.NumLabels)
		be.Free(w, b)
		return out
	}
	m.Classifier.apply(be, out, h, n)
	return out
}

// layerAdapter is the adapter's entry for layer l, nil when it has none.
func (m *ViT) layerAdapter(l int) *LayerAdapter {
	if m.Adapter == nil || l >= len(m.Adapter.Layers) {
		return nil
	}
	return &m.Adapter.Layers[l]
}

// addLoRA adds PEFT's LoRA term Scale·B(A x) to y [rows][out] of x
// [rows][in] (A [R][in], B [out][R]: checkAdapter checked them against the
// projection's widths), each product rounded to float32 before the add, as
// PEFT adds lora_B(lora_A(x))·scaling to the frozen projection's output.
func (m *ViT) addLoRA(y, x tensor.Buf, rows int, lo *LoRA) {
	if lo == nil {
		return
	}
	be := m.Backend
	in, out := len(lo.A)/lo.R, len(lo.B)/lo.R
	a, b, ax := be.FromHost(lo.A), be.FromHost(lo.B), be.Alloc(rows*lo.R)
	be.MatMulNT(ax, x, a, rows, lo.R, in)
	be.MatMulNTAdd(y, ax, b, rows, out, lo.R, lo.Scale)
	be.Free(a, b, ax)
}

// HiddenStates returns HF's hidden_states for n images: the embeddings and
// each layer's output [n·tokens][hidden], before the final LayerNorm.
func (m *ViT) HiddenStates(pixels []float32, n int) (states [][]float32, err error) {
	defer tensor.Recover(&err)
	im, err := m.Images(pixels, n)
	if err != nil {
		return nil, err
	}
	defer im.Free()
	// A copy: a host backend's ToHost may return the buffer itself, which
	// the next layer changes in place.
	x, err := m.encode(im, func(_ int, x tensor.Buf) { states = append(states, slices.Clone(m.Backend.ToHost(x))) })
	if err != nil {
		return nil, err
	}
	m.Backend.Free(x)
	return states, nil
}

// checkAdapter refuses an adapter whose shapes do not fit the model (made
// for another model), which would read out of its slices.
func (m *ViT) checkAdapter() error {
	a, c := m.Adapter, &m.Config
	if a == nil {
		return nil
	}
	if len(a.Layers) > c.NumLayers {
		return fmt.Errorf("vit: the adapter has %d layers, the model %d", len(a.Layers), c.NumLayers)
	}
	projs := c.Projections()
	for l, la := range a.Layers {
		for p := range NumProj {
			lo := *la.Slot(p)
			if lo == nil {
				continue
			}
			i := slices.IndexFunc(projs, func(pr Projection) bool { return pr.Proj == p })
			if i < 0 {
				return fmt.Errorf("vit: layer %d's adapter updates %v, which a ViT layer does not have", l, p)
			}
			pr := projs[i]
			if lo.R <= 0 || len(lo.A) != lo.R*pr.In || len(lo.B) != pr.Out*lo.R {
				return fmt.Errorf("vit: layer %d's LoRA of %s has %d and %d values at rank %d: want A [r][%d] and B [%d][r]", l, pr.Name, len(lo.A), len(lo.B), lo.R, pr.In, pr.Out)
			}
		}
	}
	if a.Classifier != nil && (len(a.Classifier) != c.NumLabels*c.HiddenSize || len(a.ClassifierBias) != c.NumLabels) {
		return fmt.Errorf("vit: the adapter's classifier has %d weights and %d biases, the model's %d×%d and %d",
			len(a.Classifier), len(a.ClassifierBias), c.NumLabels, c.HiddenSize, c.NumLabels)
	}
	return nil
}
