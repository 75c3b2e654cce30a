// Package model is a forward-only decoder transformer for HF
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM
// and OPTForCausalLM checkpoints (and Ministral-3's language model),
// computing what HF transformers computes in float32: batched forward with
// padding masks and explicit positions, the causal-LM loss, and greedy
// generation with a KV cache. It also holds ViTForImageClassification
// (ViT, vit*.go): an encoder over image patches and its classifier.
//
// The structs mirror the architecture: a Model is an embedding, a stack of
// Layers (attention + MLP, each with a norm and a residual add), a final
// norm and the LM head. Their fields are the weights, named as in the HF
// state dict. What differs between the families (Llama's RMSNorm, RoPE and
// gated MLP; OPT's learned positions, LayerNorms, biases and ReLU) is a
// family (family.go), picked at load. The model knows nothing about
// training: adapters (LoRA) are plain weights it applies when they are set.
//
// The model does no arithmetic itself: its weights and activations belong
// to a tensor.Backend (the CPU by default), and every step of the forward
// pass is one call of that backend.
package model

import (
	"github.com/meazo-go/meazo/tensor"
)

// Model is a loaded checkpoint. Its weights are frozen: the big matrices are
// stored once at load in the form the backend's GEMM streams.
type Model struct {
	Config
	Embed  tensor.Weight // model.embed_tokens.weight [vocab][embedDim]; rows are looked up
	Layers []Layer
	Norm   tensor.Buf    // model.norm.weight, the final RMSNorm (OPT: final_layer_norm.weight; nil without one)
	LMHead tensor.Weight // lm_head.weight [vocab][embedDim]; the same matrix as Embed when tied

	// OPT only (nil otherwise): the learned positions, the final
	// LayerNorm's bias, and the projections between the embeddings' width
	// (word_embed_proj_dim) and the hidden size where they differ.
	Positions  tensor.Weight // embed_positions.weight [MaxPositions+2][hidden]: position p is row p+2
	NormBias   tensor.Buf    // final_layer_norm.bias
	ProjectIn  tensor.Weight // project_in.weight [hidden][embedDim]
	ProjectOut tensor.Weight // project_out.weight [embedDim][hidden]

	// Adapter, when set, is applied by Forward and Generate (PEFT LoRA).
	Adapter *Adapter
	// Prompt, when set, holds prompt-tuning virtual-token embeddings
	// [n][hidden] that Forward and Generate put before every sequence (PEFT
	// PROMPT_TUNING); their outputs then cover the n+T positions.
	Prompt []float32

	// Backend holds the weights and runs every operation of the forward
	// pass (a CPU backend unless the loader was given another).
	Backend tensor.Backend

	fam        *family         // how the model's family computes (family.go)
	invFreq    []float32       // RoPE inverse frequencies (llama3-scaled for Llama 3.x); nil without RoPE
	storedBF16 map[string]bool // the tensors the checkpoint stored as bfloat16 and held so, by name
	storedF16  map[string]bool // the tensors the checkpoint stored as float16 (held in float32), by name
	params     int64           // the parameters loaded (ParamCount)
}

// ParamCount is the number of the model's parameters, as transformers'
// num_parameters counts them (a tied head once): those it loaded, so of a
// multimodal checkpoint (Ministral-3) the language model's alone.
func (m *Model) ParamCount() int64 { return m.params }

// HoldsBF16 says whether some weights are held in bfloat16: those a
// checkpoint stored as BF16, loaded with LoadOptions.BF16Weights. Given a
// checkpoint that stores none as BF16, the option keeps nothing in
// bfloat16.
func (m *Model) HoldsBF16() bool { return anyTrue(m.storedBF16) }

// StoresF16 says whether the checkpoint stored some weights as F16 (OPT's
// published checkpoints), which are held in float32.
func (m *Model) StoresF16() bool { return anyTrue(m.storedF16) }

// ForgetF16 makes the weights the checkpoint stored as F16 (held in
// float32 already) float32 ones from now on: their Tensors no longer say
// F16, so that a merge into them is not rounded to float16 and Save
// writes them in float32 (meazo-inspect merge --dtype float32).
func (m *Model) ForgetF16() { clear(m.storedF16) }

// anyTrue says whether some value of set is true.
func anyTrue(set map[string]bool) bool {
	for _, v := range set {
		if v {
			return true
		}
	}
	return false
}

// Layer is one decoder block:
//
//	h   = x + Attn(AttnNorm(x))
//	out = h + MLP(MLPNorm(h))
//
// (OPT-350m's post-norm blocks: h = AttnNorm(x + Attn(x)), out =
// MLPNorm(h + MLP(h))).
type Layer struct {
	AttnNorm     tensor.Buf // input_layernorm.weight (OPT: self_attn_layer_norm.weight)
	AttnNormBias tensor.Buf // OPT: self_attn_layer_norm.bias (a LayerNorm); nil for RMSNorm
	Attn         Attention
	MLPNorm      tensor.Buf // post_attention_layernorm.weight (OPT: final_layer_norm.weight)
	MLPNormBias  tensor.Buf // OPT: final_layer_norm.bias
	MLP          MLP
}

// Attention is grouped-query self-attention with RoPE (OPT: multi-head
// attention without, its positions added to the embeddings). Query head j
// reads key/value head j / (NumHeads/NumKVHeads).
type Attention struct {
	Q, K, V, O   tensor.Weight // q_proj [heads·hd][hidden], k_proj/v_proj [kv·hd][hidden], o_proj [hidden][heads·hd] (OPT: out_proj)
	QKV          tensor.Weight // q_proj, k_proj, v_proj stacked, on a backend that stacks them (tensor.Stacker; Q, K, V are nil then)
	QNorm, KNorm tensor.Buf    // Qwen3 only: RMSNorm over each head's hd values, before RoPE (shared by heads)
	// The projections' biases, added after each product; nil where the
	// projection has none: OPT has all four, Qwen2 q, k and v, Llama and
	// Qwen3 all four with attention_bias (Config.QKVBias, Config.OBias).
	QBias, KBias, VBias, OBias tensor.Buf
}

// MLP is the SiLU-gated feed-forward block: Down(silu(Gate(x)) · Up(x))
// (with Llama's mlp_bias, each product plus its bias); OPT's is
// Down(relu(Up(x) + UpBias)) + DownBias (fc1 and fc2, no Gate).
type MLP struct {
	Gate, Up, Down             tensor.Weight
	GateUp                     tensor.Weight // gate_proj and up_proj stacked, on a backend that stacks them (Gate, Up are nil then)
	GateBias, UpBias, DownBias tensor.Buf    // Llama's mlp_bias (OPT: fc1.bias, fc2.bias; no gate); nil without
}

// Adapter holds the low-rank updates of every layer; a nil update in a
// layer means that projection has none.
// It is separate from the frozen weights so that one forward can run several
// adapters side by side (the perturbed variants of a ZO step).
type Adapter struct {
	Layers []LayerAdapter // one per decoder layer
}

// LayerAdapter holds a layer's LoRA updates, one per projection (Proj;
// OPT's out_proj, fc1 and fc2 are O, Up and Down; a ViT's query, key,
// value, attention.output.dense, intermediate.dense and output.dense are Q,
// K, V, O, Up and Down: ViTConfig.Projections).
type LayerAdapter struct {
	Q, K, V, O     *LoRA
	Gate, Up, Down *LoRA
}

// LoRA is a low-rank update of a frozen projection, as PEFT computes it:
// y = W x + Scale · B (A x).
type LoRA struct {
	R     int
	A     []float32 // lora_A.weight [R][in]
	B     []float32 // lora_B.weight [out][R]
	Scale float32   // lora_alpha / r (or / √r with rsLoRA)
}

// Input is a batch of B token sequences of equal length T (padded).
type Input struct {
	B, T      int
	Tokens    []int // [B·T]
	Mask      []int // [B·T], 1 = real token, 0 = padding; nil means all real
	Positions []int // [B·T] position ids; nil means the model's default (positionsOf): 0..T-1 on every row, pads included, for RoPE (HF's), OPT's from the mask
}

// Options says what Forward should return besides the loss.
type Options struct {
	Logits       bool  // all logits [B·T][vocab]
	HiddenStates bool  // HF's output_hidden_states: embeddings, input of each layer, final-norm output
	Labels       []int // [B·T], unshifted as in HF; -100 = not supervised; nil = no loss
	// Choices, with Labels, asks for more than each label's loss: for
	// sequence s, the cross-entropy of every token of Choices[s] in place
	// of one of its supervised tokens (the first, or ChoiceAt's; it must
	// have it if Choices[s] is not empty), into Output.ChoiceLoss. It
	// scores a classification's label candidates from one forward of the
	// prompt they share when each is one token: the position that predicts
	// them is the same, so a forward per candidate would compute it k
	// times. The sequence may go on past that token (a validation example
	// answered with its own label and its end-of-turn): causal attention
	// keeps what follows from reaching it.
	Choices [][]int
	// ChoiceAt[s] is which of sequence s's supervised tokens, counted from
	// 0 in order, Choices[s] stand in for (a label word after an answer's
	// "Sentiment:", all supervised); nil: the first of each.
	ChoiceAt []int
}

// Output holds what Forward computed.
type Output struct {
	Logits       []float32   // [B·(N+T)][vocab] when Options.Logits
	HiddenStates [][]float32 // NumLayers+1 entries of [B·(N+T)][hidden] when Options.HiddenStates
	Loss         float64     // token-weighted mean cross-entropy over the batch (HF's out.loss)
	LossPerSeq   []float64   // per-sequence mean cross-entropy; NaN for a row with no supervised token
	ChoiceLoss   [][]float64 // with Options.Choices: [B][len(Choices[s])], each choice's cross-entropy in place of s's supervised token that ChoiceAt names
	Tokens       int         // number of supervised tokens
	// VirtualTokens is N, the rows of each sequence before its T tokens in
	// Logits and HiddenStates: a prompt-tuning adapter's virtual tokens, as
	// PEFT returns them (0 without one).
	VirtualTokens int
}

// Free releases the model's weights and norms on its backend (device memory
// on a GPU). The model must not be used afterwards. Matrices merged into it
// (lora.Merge) are released by lora.FreeMerged, before Free.
func (m *Model) Free() {
	be := m.Backend
	weights := []tensor.Weight{m.Embed, m.Positions, m.ProjectIn, m.ProjectOut}
	if m.LMHead != m.Embed {
		weights = append(weights, m.LMHead)
	}
	bufs := []tensor.Buf{m.Norm, m.NormBias}
	for i := range m.Layers {
		l := &m.Layers[i]
		weights = append(weights, l.Attn.Q, l.Attn.K, l.Attn.V, l.Attn.QKV, l.Attn.O, l.MLP.Gate, l.MLP.Up, l.MLP.GateUp, l.MLP.Down)
		bufs = append(bufs, l.AttnNorm, l.MLPNorm, l.AttnNormBias, l.MLPNormBias, l.Attn.QNorm, l.Attn.KNorm,
			l.Attn.QBias, l.Attn.KBias, l.Attn.VBias, l.Attn.OBias, l.MLP.GateBias, l.MLP.UpBias, l.MLP.DownBias)
	}
	for _, w := range weights {
		if w != nil {
			be.FreeWeight(w)
		}
	}
	for _, b := range bufs {
		if b != nil {
			be.Free(b)
		}
	}
	m.Layers, m.Embed, m.LMHead, m.Norm, m.NormBias, m.Positions, m.ProjectIn, m.ProjectOut = nil, nil, nil, nil, nil, nil, nil, nil
}
