// Package model is a forward-only decoder transformer for HF LlamaForCausalLM
// and Qwen3ForCausalLM checkpoints, computing what HF transformers computes in
// float32: batched forward with padding masks and explicit positions, the
// causal-LM loss, and greedy generation with a KV cache.
//
// The structs mirror the architecture: a Model is an embedding, a stack of
// Layers (attention + MLP, each behind an RMSNorm and a residual add), a final
// norm and the LM head. Their fields are the weights, named as in the HF
// state dict. The model knows nothing about training: adapters (LoRA) are
// plain weights it applies when they are set.
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
	Embed  tensor.Weight // model.embed_tokens.weight [vocab][hidden]; rows are looked up
	Layers []Layer
	Norm   tensor.Buf    // model.norm.weight, the final RMSNorm
	LMHead tensor.Weight // lm_head.weight [vocab][hidden]; the same matrix as Embed when tied

	// Adapter, when set, is applied by Forward and Generate (PEFT LoRA).
	Adapter *Adapter
	// Prompt, when set, holds prompt-tuning virtual-token embeddings
	// [n][hidden] that Forward and Generate put before every sequence (PEFT
	// PROMPT_TUNING); their outputs then cover the n+T positions.
	Prompt []float32

	// Backend holds the weights and runs every operation of the forward
	// pass (a CPU backend unless the loader was given another).
	Backend tensor.Backend

	invFreq    []float32       // RoPE inverse frequencies (llama3-scaled for Llama 3.x)
	storedBF16 map[string]bool // the tensors the checkpoint stored as bfloat16, by name
}

// Layer is one decoder block:
//
//	h   = x + Attn(AttnNorm(x))
//	out = h + MLP(MLPNorm(h))
type Layer struct {
	AttnNorm tensor.Buf // input_layernorm.weight
	Attn     Attention
	MLPNorm  tensor.Buf // post_attention_layernorm.weight
	MLP      MLP
}

// Attention is grouped-query self-attention with RoPE. Query head j reads
// key/value head j / (NumHeads/NumKVHeads).
type Attention struct {
	Q, K, V, O   tensor.Weight // q_proj [heads·hd][hidden], k_proj/v_proj [kv·hd][hidden], o_proj [hidden][heads·hd]
	QKV          tensor.Weight // q_proj, k_proj, v_proj stacked, on a backend that stacks them (tensor.Stacker; Q, K, V are nil then)
	QNorm, KNorm tensor.Buf    // Qwen3 only: RMSNorm over each head's hd values, before RoPE (shared by heads)
}

// MLP is the SiLU-gated feed-forward block: Down(silu(Gate(x)) · Up(x)).
type MLP struct {
	Gate, Up, Down tensor.Weight
	GateUp         tensor.Weight // gate_proj and up_proj stacked, on a backend that stacks them (Gate, Up are nil then)
}

// Adapter holds the low-rank updates of every layer; a nil Q or V in a
// layer means that projection has none.
// It is separate from the frozen weights so that one forward can run several
// adapters side by side (the perturbed variants of a ZO step).
type Adapter struct {
	Layers []LayerAdapter // one per decoder layer
}

// LayerAdapter holds a layer's LoRA updates of q_proj and v_proj.
type LayerAdapter struct {
	Q, V *LoRA
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
	Positions []int // [B·T] RoPE positions; nil means 0..T-1 on every row, pads included (HF's default)
}

// Options says what Forward should return besides the loss.
type Options struct {
	Logits       bool  // all logits [B·T][vocab]
	HiddenStates bool  // HF's output_hidden_states: embeddings, input of each layer, final-norm output
	Labels       []int // [B·T], unshifted as in HF; -100 = not supervised; nil = no loss
}

// Output holds what Forward computed.
type Output struct {
	Logits       []float32   // [B·(N+T)][vocab] when Options.Logits
	HiddenStates [][]float32 // NumLayers+1 entries of [B·(N+T)][hidden] when Options.HiddenStates
	Loss         float64     // token-weighted mean cross-entropy over the batch (HF's out.loss)
	LossPerSeq   []float64   // per-sequence mean cross-entropy; NaN for a row with no supervised token
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
	be.FreeWeight(m.Embed)
	if m.LMHead != m.Embed {
		be.FreeWeight(m.LMHead)
	}
	be.Free(m.Norm)
	for i := range m.Layers {
		l := &m.Layers[i]
		for _, w := range []tensor.Weight{l.Attn.Q, l.Attn.K, l.Attn.V, l.Attn.QKV, l.Attn.O, l.MLP.Gate, l.MLP.Up, l.MLP.GateUp, l.MLP.Down} {
			if w != nil {
				be.FreeWeight(w)
			}
		}
		be.Free(l.AttnNorm, l.MLPNorm)
		if l.Attn.QNorm != nil {
			be.Free(l.Attn.QNorm, l.Attn.KNorm)
		}
	}
	m.Layers, m.Embed, m.LMHead, m.Norm = nil, nil, nil, nil
}
