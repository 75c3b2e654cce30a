package model

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// Load reads config.json and the safetensors weights (one file, or shards
// listed in model.safetensors.index.json) from an HF model directory.
// F32, BF16 and F16 weights are converted to float32 exactly.
func Load(dir string) (*Model, error) { return LoadWith(dir, LoadOptions{}) }

// LoadOptions say how and where the weights are held. BF16Weights changes
// memory only (the products widen the bfloat16 weights exactly). The
// Backend decides the arithmetic: a GPU's products round their last bits
// otherwise than the CPU's (tensor.Backend.Arithmetic names it), and there
// stacking the projections may change those bits too (cuBLAS's wider
// products), which Unstacked does not do.
type LoadOptions struct {
	// BF16Weights keeps the matrices a checkpoint stores as BF16 in bfloat16
	// in memory (half of float32), widened exactly inside the GEMM: the
	// logits are bit-identical to float32 storage. Matrices stored in other
	// dtypes stay float32. On the CPU the GEMM is within a few % of float32
	// at large batches and faster when decoding, where it streams half the
	// bytes.
	BF16Weights bool
	// Backend holds the weights and computes the forward pass; nil means a
	// CPU backend on all cores.
	Backend tensor.Backend
	// Unstacked keeps q/k/v and gate/up as separate matrices even on a
	// backend that would stack them (tensor.Stacker): full-parameter
	// training perturbs and updates each on its own (Model.Tensors).
	Unstacked bool
}

// backend is the backend the options name, or the default CPU backend.
func (o LoadOptions) backend() tensor.Backend {
	if o.Backend != nil {
		return o.Backend
	}
	return cpu.New(cpu.Options{})
}

// LoadWith is Load with options.
func LoadWith(dir string, opts LoadOptions) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if cfg.GenerationEOS, cfg.HasGenerationConfig, err = LoadGenerationEOS(dir, cfg.VocabSize); err != nil {
		return nil, err
	}
	r, err := openCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer r.ck.Close()
	if r.name, err = checkpointName(r.ck, cfg); err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	be := opts.backend()
	stored := func(name string) safetensors.Dtype {
		info, _ := r.ck.Info(r.name(name))
		return info.Dtype
	}
	keepBF16 := func(name string) bool { // exact: the values are bfloat16 already
		return opts.BF16Weights && stored(name) == safetensors.BF16
	}
	storedBF16, storedF16 := map[string]bool{}, map[string]bool{}
	m, err := build(cfg, be, !opts.Unstacked, keepBF16, func(name string, shape []int) ([]float32, error) {
		v, err := r.load(name, shape)
		storedBF16[name], storedF16[name] = keepBF16(name), stored(name) == safetensors.F16
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	if err := checkAllRead(r.unused(func(n string) bool { return notAWeight(n, cfg) }), cfg); err != nil {
		m.Free()
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	m.storedBF16, m.storedF16 = storedBF16, storedF16
	return m, nil
}

// checkpointName maps a tensor's name in the model (HF's state dict of the
// ForCausalLM class) to its name in the checkpoint. They are the same but
// for Ministral-3's multimodal checkpoint (its language model's names:
// multimodalNames) and a checkpoint saved from the base model (LlamaModel,
// Qwen3Model, OPTModel, …), whose names lack the "model." prefix, which
// from_pretrained adds back when it loads one into the ForCausalLM class.
// As from_pretrained, it refuses such a checkpoint with an lm_head.weight
// (which no base model saves: transformers calls the state dict corrupted),
// and an untied model's (tie_word_embeddings false) without one, whose head
// from_pretrained would make up at random.
func checkpointName(ck *safetensors.Checkpoint, cfg *Config) (func(string) string, error) {
	if cfg.Multimodal {
		return multimodalNames(ck), nil
	}
	embed := "model.embed_tokens.weight"
	if cfg.IsOPT() {
		embed = "model.decoder.embed_tokens.weight"
	}
	_, full := ck.Info(embed)
	_, base := ck.Info(strings.TrimPrefix(embed, "model."))
	if full || !base {
		return func(name string) string { return name }, nil
	}
	_, head := ck.Info("lm_head.weight")
	switch {
	case head:
		return nil, fmt.Errorf("the checkpoint's names are a base model's (%s, without the model. prefix) but it holds lm_head.weight, which no base model has: "+
			"from_pretrained refuses such a state dict as corrupted; save the %s's whole state dict (names with model.)", strings.TrimPrefix(embed, "model."), cfg.Architecture)
	case !cfg.TieEmbeddings:
		return nil, fmt.Errorf("the checkpoint is a base model's (%s, without the model. prefix), without the lm_head.weight that the untied %s (tie_word_embeddings false) needs: "+
			"from_pretrained would make the head up at random; save the %s's whole state dict (names with model.)", strings.TrimPrefix(embed, "model."), cfg.Architecture, cfg.Architecture)
	}
	return func(name string) string { return strings.TrimPrefix(name, "model.") }, nil
}

// checkpointReader reads a model's tensors from a checkpoint, each by its
// name in the model (name maps it to the checkpoint's), checking its shape
// against the one the config implies, and records which it read, so that a
// loader can refuse the tensors the model has no use for.
type checkpointReader struct {
	ck   *safetensors.Checkpoint
	name func(string) string
	read map[string]bool // by name in the checkpoint
}

// openCheckpoint opens dir's safetensors weights (one file, or the shards
// model.safetensors.index.json lists), each tensor's name in the model
// being its name in the checkpoint until the caller says otherwise.
func openCheckpoint(dir string) (*checkpointReader, error) {
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	return &checkpointReader{ck: ck, name: func(name string) string { return name }, read: map[string]bool{}}, nil
}

// load is a weightLoader: the tensor's values in float32 (the checkpoint's
// copy is released: the converted one is all a model keeps).
func (r *checkpointReader) load(name string, shape []int) ([]float32, error) {
	sn := r.name(name)
	info, ok := r.ck.Info(sn)
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", clip.Quote(sn))
	}
	if !slices.Equal(info.Shape, shape) {
		return nil, fmt.Errorf("tensor %s has shape %v, the config implies %v", clip.Quote(sn), info.Shape, shape)
	}
	r.read[sn] = true
	v, err := r.ck.Float32(sn)
	r.ck.Release(sn)
	return v, err
}

// unused lists, sorted, the checkpoint's tensors that were not read, but
// for those skip (if not nil) says are not weights of the model.
func (r *checkpointReader) unused(skip func(string) bool) []string {
	var unused []string
	for _, n := range r.ck.Names() {
		if !r.read[n] && (skip == nil || !skip(n)) {
			unused = append(unused, n)
		}
	}
	slices.Sort(unused)
	return unused
}

// notAWeight says which tensors of a checkpoint a decoder does not read
// and needs not: a tied model's saved lm_head.weight (Qwen3-0.6B's
// checkpoint has one: HF ties it to the embeddings), rotary_emb.inv_freq
// buffers (HF recomputes them), and a multimodal checkpoint's vision tower
// and projector.
func notAWeight(n string, cfg *Config) bool {
	return n == "lm_head.weight" && cfg.TieEmbeddings || strings.HasSuffix(n, ".rotary_emb.inv_freq") ||
		cfg.Multimodal && notLanguageModel(n)
}

// checkAllRead refuses a checkpoint with tensors the model did not read
// (unused, sorted): config.json then describes another model than the
// weights (fewer layers than were saved, Llama's architecture over Qwen3's
// weights with their q_norm and k_norm), and the model would run as a part
// of itself without a word.
func checkAllRead(unused []string, cfg *Config) error {
	if len(unused) == 0 {
		return nil
	}
	more := ""
	if len(unused) > 3 {
		more = fmt.Sprintf(" and %d more", len(unused)-3)
		unused = unused[:3]
	}
	for i, n := range unused {
		if len(n) > clip.Max { // a stranger's name of megabytes
			unused[i] = clip.Quote(n)
		}
	}
	return fmt.Errorf("the checkpoint holds tensors that the %d-layer %s config.json describes has no use for (%s%s): "+
		"config.json does not describe these weights (num_hidden_layers, architectures?)", cfg.NumLayers, cfg.Architecture, strings.Join(unused, ", "), more)
}

// weightLoader returns the float32 values of the named tensor, which must
// have the given shape: read from a checkpoint, or made up (random models).
type weightLoader func(name string, shape []int) ([]float32, error)

// FromValues builds a model of config c from values, which returns each
// named tensor's float32 values (HF state-dict names and shapes; a tied
// model asks no lm_head.weight), on the backend opts names. With
// opts.BF16Weights every matrix is kept in bfloat16 and every tensor held
// as bfloat16 numbers: the values must be bfloat16 numbers already. For
// tests and tools that make a model from values in memory.
func FromValues(c *Config, values func(name string, shape []int) ([]float32, error), opts LoadOptions) (*Model, error) {
	if !opts.BF16Weights {
		return build(c, opts.backend(), !opts.Unstacked, nil, values)
	}
	m, err := build(c, opts.backend(), !opts.Unstacked, func(string) bool { return true }, values)
	if err != nil {
		return nil, err
	}
	ts, _ := m.Tensors()
	m.storedBF16 = map[string]bool{}
	for _, t := range ts {
		m.storedBF16[t.Name] = true
	}
	return m, nil
}

// build assembles a Model on backend be from named tensors (HF state-dict
// names), as its family lays them out (family.build), each family in a
// fixed order. Matrices for which keepBF16 (if not nil) says so are stored
// as bfloat16. mayStack lets a backend that asks for it (tensor.Stacker)
// have q/k/v and gate/up stacked.
func build(c *Config, be tensor.Backend, mayStack bool, keepBF16 func(name string) bool, load weightLoader) (_ *Model, err error) {
	defer tensor.Recover(&err) // a device failure (out of memory, …) is an error
	fam := familyOf(c)
	m := &Model{Config: *c, Backend: be, fam: fam}
	counted := func(name string, shape []int) ([]float32, error) {
		v, err := load(name, shape)
		m.params += int64(len(v))
		return v, err
	}
	st, ok := be.(tensor.Stacker)
	b := &builder{be: be, stack: mayStack && ok && st.StackProjections(), keepBF16: keepBF16, load: counted}
	fam.build(m, b)
	if b.err != nil {
		return nil, b.err
	}
	return m, nil
}

// listTensors calls list with the name and shape of each tensor a model of
// config c reads, in the order build reads them, building nothing.
func listTensors(c *Config, list func(name string, shape []int)) error {
	fam := familyOf(c)
	m := &Model{Config: *c, fam: fam}
	b := &builder{load: func(name string, shape []int) ([]float32, error) {
		list(name, slices.Clone(shape))
		return nil, nil
	}}
	fam.build(m, b)
	return b.err
}

// builder reads a model's tensors by name and hands them to the backend;
// after the first error it reads nothing more and keeps that error. With
// no backend (listTensors) it only reads.
type builder struct {
	be       tensor.Backend
	stack    bool // the backend stacks projections (tensor.Stacker)
	keepBF16 func(name string) bool
	load     weightLoader
	err      error
}

// vector reads a vector of n values.
func (b *builder) vector(name string, n int) tensor.Buf {
	if b.err != nil {
		return nil
	}
	v, err := b.load(name, []int{n})
	if b.err = err; err != nil || b.be == nil {
		return nil
	}
	return b.be.FromHost(v)
}

// bf16 says whether the named matrix is stored as bfloat16.
func (b *builder) bf16(name string) bool { return b.keepBF16 != nil && b.keepBF16(name) }

// matrix reads a matrix [rows][cols] and packs it.
func (b *builder) matrix(name string, rows, cols int) tensor.Weight {
	if b.err != nil {
		return nil
	}
	v, err := b.load(name, []int{rows, cols})
	if b.err = err; err != nil || b.be == nil {
		return nil
	}
	return b.be.Pack(v, rows, cols, b.bf16(name))
}

// stacked packs the named matrices of cols columns one on top of the
// other, as one matrix (tensor.Stacker), or returns nil when the backend
// does not stack or they would be stored differently.
func (b *builder) stacked(names []string, rows []int, cols int) tensor.Weight {
	if b.err != nil || !b.stack {
		return nil
	}
	for _, name := range names {
		if b.bf16(name) != b.bf16(names[0]) {
			return nil
		}
	}
	var all []float32
	for i, name := range names {
		v, err := b.load(name, []int{rows[i], cols})
		if b.err = err; err != nil {
			return nil
		}
		all = append(all, v...)
	}
	return b.be.Pack(all, len(all)/cols, cols, b.bf16(names[0]))
}

// buildLlama reads a Llama, Qwen2 or Qwen3 checkpoint's tensors into m, in a
// fixed order: the embedding, each layer's in the file's order, the final
// norm, the LM head.
func buildLlama(m *Model, b *builder) {
	c := &m.Config
	m.invFreq = ropeInvFreq(c)
	d := c.HiddenSize
	m.Embed = b.matrix("model.embed_tokens.weight", c.VocabSize, d)
	for i := 0; i < c.NumLayers && b.err == nil; i++ { // a missing tensor ends the build: no more layers of a config that asks for thousands
		m.Layers = append(m.Layers, b.llamaLayer(c, i))
	}
	m.Norm = b.vector("model.norm.weight", d)
	if c.TieEmbeddings {
		// HF ties lm_head to embed_tokens; a stored lm_head.weight is ignored.
		m.LMHead = m.Embed
	} else {
		m.LMHead = b.matrix("lm_head.weight", c.VocabSize, d)
	}
}

// llamaLayer reads decoder layer i of a Llama, Qwen2 or Qwen3 checkpoint:
// its matrices, the biases its config gives them (Config.QKVBias, OBias,
// MLPBias), Qwen3's q/k norms and the two RMSNorms.
func (b *builder) llamaLayer(c *Config, i int) Layer {
	d, hd := c.HiddenSize, c.HeadDim
	qd, kvd, f := c.NumHeads*hd, c.NumKVHeads*hd, c.IntermediateSize
	p := fmt.Sprintf("model.layers.%d.", i)
	var l Layer
	l.AttnNorm = b.vector(p+"input_layernorm.weight", d)
	qkv := []string{p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"}
	if l.Attn.QKV = b.stacked(qkv, []int{qd, kvd, kvd}, d); l.Attn.QKV == nil {
		l.Attn.Q = b.matrix(qkv[0], qd, d)
		l.Attn.K = b.matrix(qkv[1], kvd, d)
		l.Attn.V = b.matrix(qkv[2], kvd, d)
	}
	if c.QKVBias {
		l.Attn.QBias = b.vector(p+"self_attn.q_proj.bias", qd)
		l.Attn.KBias = b.vector(p+"self_attn.k_proj.bias", kvd)
		l.Attn.VBias = b.vector(p+"self_attn.v_proj.bias", kvd)
	}
	l.Attn.O = b.matrix(p+"self_attn.o_proj.weight", d, qd)
	if c.OBias {
		l.Attn.OBias = b.vector(p+"self_attn.o_proj.bias", d)
	}
	if c.QKNorm {
		l.Attn.QNorm = b.vector(p+"self_attn.q_norm.weight", hd)
		l.Attn.KNorm = b.vector(p+"self_attn.k_norm.weight", hd)
	}
	l.MLPNorm = b.vector(p+"post_attention_layernorm.weight", d)
	gateUp := []string{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}
	if l.MLP.GateUp = b.stacked(gateUp, []int{f, f}, d); l.MLP.GateUp == nil {
		l.MLP.Gate = b.matrix(gateUp[0], f, d)
		l.MLP.Up = b.matrix(gateUp[1], f, d)
	}
	l.MLP.Down = b.matrix(p+"mlp.down_proj.weight", d, f)
	if c.MLPBias {
		l.MLP.GateBias = b.vector(p+"mlp.gate_proj.bias", f)
		l.MLP.UpBias = b.vector(p+"mlp.up_proj.bias", f)
		l.MLP.DownBias = b.vector(p+"mlp.down_proj.bias", d)
	}
	return l
}
