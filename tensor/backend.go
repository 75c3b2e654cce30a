package tensor

// Backend is the seam between the model and the hardware it computes on.
// The model holds its weights as Weights and its activations as Bufs, and
// does every piece of arithmetic through a Backend's methods; it never reads
// or writes a Buf's elements itself. The CPU backend (package tensor/cpu)
// computes on host memory; the CUDA backend (package tensor/cuda) implements
// the same interface with device memory, without a change to the model's
// code. Backends are chosen by name (Open).
//
// What crosses the seam from the host is small and changes every call: token
// ids, attention masks, the indices of rows to gather, RoPE tables, and the
// trainable parameters (LoRA matrices, prompt embeddings), which FromHost
// hands over. What comes back is either small (losses, argmax ids) or asked
// for explicitly (ToHost: logits, hidden states).
//
// Lifetimes: the model frees every buffer and cache it allocates or uploads
// (Free, FreeKVCache) before the call that made it returns, so a device
// backend's memory use is the weights plus one call's working set. The CPU
// backend leaves freeing to the garbage collector.
//
// Every method computes each output element in an order fixed by the
// arguments alone, so a backend's results are bit-identical run to run; the
// CPU backend's are also independent of the number of worker threads.
type Backend interface {
	// Name says which backend this is: the name it is registered under
	// ("cpu", "cuda").
	Name() string
	// Describe says in one line what the backend runs on, for logs: the
	// CPU's kernel path, or the GPU's name, memory and library versions.
	Describe() string
	// Arithmetic names what decides the backend's rounding: the kernels
	// and libraries it computes with, and the device where that matters.
	// Two backends that give the same string compute the same bits for the
	// same calls; a run resumed on a backend with another may continue
	// correctly but not bit for bit.
	Arithmetic() string
	// Close releases everything the backend holds (device memory, library
	// handles). The backend must not be used afterwards.
	Close() error

	// Alloc returns a zeroed buffer of n float32 values.
	Alloc(n int) Buf
	// FromHost returns src as a buffer. The backend may keep using src's
	// memory (the CPU backend does: no copy), so src must not change while
	// the buffer is in use.
	FromHost(src []float32) Buf
	// ToHost returns b's values in host memory. It may be b's own memory (the
	// CPU backend's is: no copy), so the caller must copy what it keeps if b
	// is written again.
	ToHost(b Buf) []float32
	// Free releases buffers made by Alloc or FromHost (not views made by
	// Slice). They must not be used afterwards.
	Free(bufs ...Buf)
	// Pack stores a frozen matrix W [n][k] (HF's out × in layout) for MatMul;
	// bf16 stores it as bfloat16 (exact for a bf16 checkpoint's values).
	Pack(w []float32, n, k int, bf16 bool) Weight
	// FreeWeight releases a matrix made by Pack.
	FreeWeight(w Weight)

	// Rows writes rows ids of W into dst [len(ids)][k]: the embedding lookup
	// (and a way to read a packed matrix back).
	Rows(dst Buf, w Weight, ids []int)
	// Gather writes rows ids of src [*][width] into dst [len(ids)][width].
	Gather(dst, src Buf, width int, ids []int)
	// Copy copies src into dst (equal lengths).
	Copy(dst, src Buf)

	// MatMul computes y [rows][N] = x [rows][K] · Wᵀ, overwriting y.
	MatMul(y, x Buf, rows int, w Weight)
	// MatMulNT computes y [rows][n] = x [rows][k] · bᵀ for an unpacked b
	// [n][k] that changes between calls (LoRA's A and B), overwriting y.
	MatMulNT(y, x, b Buf, rows, n, k int)
	// MatMulAdd computes y [rows][N] += x [rows][K] · Wᵀ: a product added
	// to what y holds (the residual connection after the output and down
	// projections). The product is rounded to float32 before it is added, as
	// MatMul then Add round it; a backend may do both in one pass (cuBLAS's
	// β = 1), saving the product's buffer and a pass over it.
	MatMulAdd(y, x Buf, rows int, w Weight)
	// MatMulNTAdd computes y [rows][n] += s · (x [rows][k] · bᵀ) for an
	// unpacked b [n][k], the product rounded to float32 first, as MatMulNT
	// then AddScaled round it (a backend that does both in one pass may
	// round s·product + y once): LoRA's up-projection added to the base
	// projection's output.
	MatMulNTAdd(y, x, b Buf, rows, n, k int, s float32)
	// Add computes y += x.
	Add(y, x Buf)
	// AddScaled computes y += s·x.
	AddScaled(y, x Buf, s float32)
	// RMSNorm writes weight · x/√(mean(x²)+eps) for each of rows rows of
	// width n (HF's LlamaRMSNorm, mean of squares in float64); dst may be x.
	RMSNorm(dst, x, weight Buf, rows, n int, eps float32)
	// SiLUMul computes gate = silu(gate) · up, the gated MLP's activation.
	SiLUMul(gate, up Buf)
	// LayerNorm writes weight·(x − mean)·rstd + bias for each of rows rows
	// of width n (torch's nn.LayerNorm, the biased variance): mean =
	// Σx/n in float64, rounded to float32; d = x − mean in float32; var =
	// Σd²/n in float64, rounded to float32; rstd = 1/√(var+eps) rounded to
	// float32; then ((d·rstd)·weight) + bias, each operation rounded to
	// float32. The float64 sums add element j into partial sum j mod 16,
	// then the 16 partials in order (as RMSNorm). dst may be x.
	LayerNorm(dst, x, weight, bias Buf, rows, n int, eps float32)
	// AddBias adds bias [n] to every one of the rows rows of y [rows][n]:
	// a projection's bias, added after its product.
	AddBias(y, bias Buf, rows, n int)
	// ReLU sets every element of x below zero to zero (−0 and NaN stay as
	// they are, as torch.relu leaves them).
	ReLU(x Buf)
	// GELU sets every element x of x to x·½·(1 + erf(x/√2)) (torch's exact
	// GELU, HF's "gelu": ViT's activation), computed in float64 and rounded
	// once.
	GELU(x Buf)
	// EncoderAttention writes into out [seqs·tokens][heads·hd] the attention
	// of every token of a sequence over all tokens of that sequence (no
	// causal mask, no cache: a ViT encoder's): per head, softmax(scale·q·kᵀ)
	// then the product with v, for q, k, v [seqs·tokens][heads·hd]. A score
	// is the float64 sum over the head's dimensions in order of the exact
	// products, rounded to float32 and multiplied by scale; the softmax
	// subtracts the row's largest score, takes the CPU backend's float32 Exp,
	// and divides by the exponentials' float64 sum in token order, rounding
	// each probability to float32; each output is the float64 sum in token
	// order of probability × value, rounded once. out is none of q, k, v.
	// (The CUDA backend's batched-GEMM path, its default from 64 tokens,
	// sums the scores and outputs in cuBLAS's order and normalises as its
	// decoder attention does: within float32 rounding of this, not its
	// bits; docs/BACKENDS.md.)
	EncoderAttention(out, q, k, v Buf, seqs, tokens, heads, hd int, scale float32)
	// RoPE rotates each of the heads vectors of width hd in every row of x
	// [rows][heads·hd] by HF's rotate_half rule, with cos and sin
	// [tableRows][hd/2]: row r uses table row r mod tableRows (so several
	// copies of one batch share a table).
	RoPE(x Buf, rows, heads, hd int, cos, sin Buf, tableRows int)

	// NewKVCache returns a key/value store for seqs sequences of kvHeads
	// heads of width hd, capacity slots each, in layers separate layers.
	NewKVCache(seqs, kvHeads, capacity, hd, layers int) KVCache
	// FreeKVCache releases a cache made by NewKVCache.
	FreeKVCache(c KVCache)
	// Attention first stores the new keys and values k, v
	// [a.Seqs·a.Tokens][kvHeads·hd] of each sequence at cache slots
	// a.Start … a.Start+a.Tokens−1 of the given layer. Then, for every query
	// head of q [a.Seqs·a.Tokens][heads·hd], it writes
	// softmax(a.Scale·q·kᵀ)·v into out (same shape); head j reads kv head
	// j/(heads/kvHeads) (grouped-query attention). The query of new token t
	// sits at slot a.Start+t and sees the keys at slots s ≤ a.Start+t with
	// a.Mask[seq·capacity+s] == 1 and, if a.Window > 0, a.Start+t−s <
	// a.Window: causality and the window count cache slots, not position
	// ids. The other keys get probability exactly 0 (HF's additive mask,
	// whose masked terms underflow to 0). A query that sees no key at all
	// (a padding slot in a left-padded batch) gets exactly zeros, never NaN,
	// so that padding cannot spread NaN into real rows of later layers.
	// Queries at padding slots are still computed and written. The call
	// uses the cache's first a.Seqs sequences.
	Attention(out, q, k, v Buf, c KVCache, layer int, a AttentionArgs)

	// CrossEntropy returns, for each i, logsumexp(row) − row[targets[i]] of
	// row ids[i] of logits [*][width], in float64.
	CrossEntropy(logits Buf, width int, ids, targets []int) []float64
	// Argmax returns the index of the largest value of each row of x
	// [*][width] (the first one on ties), for rows rows: a left-to-right
	// scan that moves to column i when x[i] > x[best], so a NaN never takes
	// over, and a NaN in column 0 keeps it.
	Argmax(x Buf, rows, width int) []int
}

// DeviceMemory is implemented by backends that compute in memory of their
// own (a GPU's): held is what they hold from the device now — weights,
// buffers, and freed buffers kept for reuse — and peak the most they have
// held since they were opened. The CPU backend's memory is the process's
// (its peak resident set size).
type DeviceMemory interface {
	DeviceMemory() (held, peak uint64)
}

// HostReader is implemented by backends whose ToHost copies into a new
// host slice (a GPU's download), to read a buffer back into memory the
// caller owns instead: ToHostInto(b, dst) copies b's values into dst,
// which must hold at least b.Len() values, and returns dst[:b.Len()]. A
// caller that reads many buffers back one after another (model.Save, a
// model's weights a chunk at a time) then reuses one host slice rather
// than making garbage of the model's size. The CPU backend does not
// implement it: its ToHost returns the buffer's own memory, which
// allocates nothing.
type HostReader interface {
	ToHostInto(b Buf, dst []float32) []float32
}

// Stacker is implemented by backends that may multiply a layer's
// projections of one input stacked into one matrix (q|k|v, gate|up): one
// wider product instead of two or three, which on a GPU can be faster
// (cuBLAS runs fewer, wider GEMMs better). When StackProjections says so,
// the model packs those weights stacked and splits the product with
// Gather. On the CPU it is no faster (its GEMM is near the FMA peak at
// every width, and the split copies: a Qwen3-0.6B forward measured 1-2 %
// slower), so only tests ask for it there.
type Stacker interface {
	StackProjections() bool
}

// BF16Multiplier is implemented by backends that can multiply by
// bfloat16-stored weights in bfloat16 (Options.BF16Products: the CUDA
// backend, on the tensor cores); BF16Products says whether this one was
// opened to. A backend without it (the CPU's) widens such weights and
// multiplies in float32 whatever Options.BF16Products says.
type BF16Multiplier interface {
	BF16Products() bool
}

// NormRoPE is implemented by backends that apply a per-head RMSNorm and
// RoPE in one pass (Qwen3's q and k norms, which precede the rotation):
// RMSNormRoPE(x, weight, rows, heads, hd, eps, cos, sin, tableRows) gives
// the bits of RMSNorm(x, x, weight, rows·heads, hd, eps) then RoPE(x, rows,
// heads, hd, cos, sin, tableRows). On a GPU that is two launches and a
// read and write of q and k fewer per layer; the CPU backend, whose norm
// and rotation of a row run from its cache, does not implement it.
type NormRoPE interface {
	RMSNormRoPE(x, weight Buf, rows, heads, hd int, eps float32, cos, sin Buf, tableRows int)
}

// BiasFuser is implemented by backends that add a projection's bias in
// the pass of the operation that follows it (a ViT's MLP activation and
// residual adds): AddBiasGELU(x, bias, rows, n) gives the bits of
// AddBias(x, bias, rows, n) then GELU(x); AddBiasResidual(y, x, bias, rows,
// n) those of AddBias(x, bias, rows, n) then Add(y, x), except that x is
// left as it was. On a GPU each is a read and a write of x fewer; the CPU
// backend does not implement it.
type BiasFuser interface {
	AddBiasGELU(x, bias Buf, rows, n int)
	AddBiasResidual(y, x, bias Buf, rows, n int)
}

// Buf is a backend's array of float32 values (activations, norms, adapter
// parameters). Its elements are reached only through the Backend that made
// it; Slice gives a view that shares its storage.
type Buf interface {
	Len() int
	// Slice returns the elements [lo, hi) as a buffer sharing storage.
	Slice(lo, hi int) Buf
}

// Weight is a frozen matrix W [N][K] stored by a backend for MatMul.
type Weight interface {
	Shape() (n, k int)
}

// KVCache is a backend's key/value store for attention (NewKVCache).
type KVCache interface {
	// Capacity is the number of positions each sequence can hold.
	Capacity() int
}

// AttentionArgs describes one Attention call (see Backend.Attention).
type AttentionArgs struct {
	Seqs, Tokens   int // sequences in the batch, new tokens per sequence
	Heads, KVHeads int // query heads, key/value heads
	HeadDim        int
	Start          int // cache slot of each sequence's first new token
	// Mask [Seqs·Capacity] is 1 where a slot holds a real token, 0 for
	// padding; it covers the new slots too. The model passes the same mask
	// to every layer of a step.
	Mask   []int
	Window int     // sliding window in slots (keys with qslot−kslot < Window); 0 = none
	Scale  float32 // multiplies q·kᵀ: 1/√HeadDim
}

// DeviceError is how a backend reports a failure of its device (out of
// memory, a failed kernel launch) from a method that has no error result:
// it panics with a *DeviceError. The model's entry points (Forward,
// Generate, Losses, loading) recover it with Recover and return it as their
// error, so a user sees one line such as "cuda: out of device memory: 2.1
// GB asked for, 1.2 GB free of 79.1 GB" instead of a crash.
type DeviceError struct{ Err error }

// Error is the device's message.
func (e *DeviceError) Error() string { return e.Err.Error() }

// Unwrap gives errors.Is and errors.As the device's error.
func (e *DeviceError) Unwrap() error { return e.Err }

// Fail panics with a *DeviceError wrapping err.
func Fail(err error) { panic(&DeviceError{err}) }

// Recover, deferred by a function with a named error result, turns a
// DeviceError panic into that error. Other panics go on.
func Recover(err *error) {
	if r := recover(); r != nil {
		de, ok := r.(*DeviceError)
		if !ok {
			panic(r)
		}
		*err = de
	}
}
