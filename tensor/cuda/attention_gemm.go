// Attention through two batched cuBLAS GEMMs around attention_softmax, for
// calls that see many cache slots.

package cuda

import (
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

// attnGEMMMaxBytes bounds the scores attentionGEMM holds at once
// (sequences × heads × new tokens × slots floats); a call that needs more
// goes to the other kernels.
const attnGEMMMaxBytes = 1 << 30

// attnMaxChunks bounds the chunks of one attentionGEMM call: three launches
// each.
const attnMaxChunks = 8

// attentionGEMM computes attention as PyTorch's eager attention does, in
// three steps over every (sequence, query head) at once: the raw scores
// q·kᵀ of the new tokens against the slots they may see by one batched
// cuBLAS GEMM, attention_softmax (attention's softmax from the scores on:
// scale, masks, max, Exp, the float64 normaliser; zeros past each query's
// slot and for a query that sees no key), then p·V by a second batched
// GEMM (a query that sees no key gets 0·v: zeros). The new tokens go in
// chunks (attnChunkLen): a chunk's queries see at most the slots j < n =
// Start + its end, so its scores stop there, and the GEMMs skip most of
// what the causal mask would zero. The GEMMs sum in cuBLAS's order, so the
// outputs are not the CPU backend's bits (the other kernels' are), but they
// are the same run to run. In column-major terms, with a head's keys
// stored transposed (kᵀ [hd][capacity]) and its values as [capacity][hd]:
// scoresᵀ (n × tokens) = kᵀᵀ · qᵀ and outᵀ (hd × tokens) = vᵀ · scoresᵀ,
// each operand a row-major block read with its row stride.
func (b *Backend) attentionGEMM(out, q tensor.Buf, c *kvCache, layer int, a tensor.AttentionArgs) {
	hd, kvh, heads, tn := a.HeadDim, a.KVHeads, a.Heads, a.Tokens
	rep, batch := heads/kvh, a.Seqs*heads
	chunk := b.attnChunkLen(tn)
	chunks := (tn + chunk - 1) / chunk
	scores := b.malloc(uint64(4 * batch * chunk * (a.Start + tn)))
	defer b.recycle(scores)
	// Per chunk, per (sequence s, head h), five arrays: kᵀ, q, scores, v, out.
	ptrs := make([]uint64, 5*batch*chunks)
	qp, op := dbuf(q).ptr, dbuf(out).ptr
	// bounds: chunk ci's first new token, its tokens, and the slots they see.
	bounds := func(ci int) (t0, tc, n int) {
		t0 = ci * chunk
		return t0, min(chunk, tn-t0), a.Start + min(tn, t0+chunk)
	}
	for ci := range chunks {
		t0, tc, n := bounds(ci)
		p := ptrs[5*batch*ci:]
		for s := range a.Seqs {
			for h := range heads {
				i, kv, row := s*heads+h, uint64(s*kvh+h/rep), uint64((s*tn+t0)*heads+h)
				p[i] = c.k[layer] + 4*kv*uint64(hd*c.capacity)
				p[batch+i] = qp + 4*row*uint64(hd)
				p[2*batch+i] = scores + 4*uint64(i*tc*n)
				p[3*batch+i] = c.v[layer] + 4*kv*uint64(c.capacity*hd)
				p[4*batch+i] = op + 4*row*uint64(hd)
			}
		}
	}
	b.grow(&b.attnPtrs, uint64(8*len(ptrs)))
	b.upload(b.attnPtrs.ptr, unsafe.Pointer(&ptrs[0]), uint64(8*len(ptrs)))
	for ci := range chunks {
		t0, tc, n := bounds(ci)
		arr := func(k int) uint64 { return b.attnPtrs.ptr + uint64(8*(5*ci+k)*batch) }
		if err := b.dev.sgemmBatched(opN, opN, n, tc, hd, arr(0), c.capacity, arr(1), heads*hd, arr(2), n, batch, false); err != nil {
			b.fail(err)
		}
		b.launch("attention_softmax", [3]uint32{uint32(tc), uint32(heads), uint32(a.Seqs)}, 128, uint32(4*n),
			devPtr(scores), devPtr(b.mask.ptr), i32Arg(tc), i32Arg(heads), i32Arg(n), i32Arg(c.capacity),
			i32Arg(a.Start+t0), i32Arg(a.Window), f32Arg(a.Scale))
		if err := b.dev.sgemmBatched(opN, opN, hd, tc, n, arr(3), hd, arr(2), n, arr(4), heads*hd, batch, false); err != nil {
			b.fail(err)
		}
	}
}

// attnChunkLen is how many of tn new tokens attentionGEMM takes at a time:
// attnChunk, or the multiple of it that makes at most attnMaxChunks
// chunks; all of them with attnChunk 0.
func (b *Backend) attnChunkLen(tn int) int {
	if b.attnChunk <= 0 || tn <= b.attnChunk {
		return tn
	}
	c := b.attnChunk
	if per := (tn + attnMaxChunks - 1) / attnMaxChunks; per > c {
		c = (per + c - 1) / c * c
	}
	return c
}
