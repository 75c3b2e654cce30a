package cuda

import (
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

// The operations of a ViT encoder block beyond OPT's (kernels/gelu.cu,
// kernels/encoder_attention.cu).

func (b *Backend) GELU(x tensor.Buf) {
	defer b.enter()()
	if x.Len() == 0 {
		return
	}
	b.launch("gelu", blocks1D(x.Len()), 256, 0, devPtr(dbuf(x).ptr), i64Arg(x.Len()))
}

// AddBiasGELU implements tensor.BiasFuser: add_bias_gelu, AddBias then
// GELU in one pass.
func (b *Backend) AddBiasGELU(x, bias tensor.Buf, rows, n int) {
	defer b.enter()()
	need(rows >= 0 && n >= 0 && x.Len() >= rows*n && bias.Len() >= n, "AddBiasGELU: %d rows of %d with x, bias of %d, %d floats", rows, n, x.Len(), bias.Len())
	if rows*n == 0 {
		return
	}
	b.launch("add_bias_gelu", blocks1D(rows*n), 256, 0, devPtr(dbuf(x).ptr), devPtr(dbuf(bias).ptr), i32Arg(n), i64Arg(rows*n))
}

// AddBiasResidual implements tensor.BiasFuser: add_bias_residual, y += x
// + bias in one pass, x unchanged.
func (b *Backend) AddBiasResidual(y, x, bias tensor.Buf, rows, n int) {
	defer b.enter()()
	need(rows >= 0 && n >= 0 && x.Len() >= rows*n && y.Len() >= rows*n && bias.Len() >= n,
		"AddBiasResidual: %d rows of %d with y, x, bias of %d, %d, %d floats", rows, n, y.Len(), x.Len(), bias.Len())
	if rows*n == 0 {
		return
	}
	b.launch("add_bias_residual", blocks1D(rows*n), 256, 0, devPtr(dbuf(y).ptr), devPtr(dbuf(x).ptr), devPtr(dbuf(bias).ptr), i32Arg(n), i64Arg(rows*n))
}

var _ tensor.BiasFuser = (*Backend)(nil)

// defaultEncGEMMMinTokens is encGEMMMinTokens's default: the batched GEMMs
// for sequences of 64 tokens or more (ViT-B/16's 197 at 224×224), the exact
// kernel below. Chosen without a GPU: the exact kernel's serial float64
// chains grow with the tokens, the GEMMs' launches do not. On an H200
// (docs/bench/2026-11-30-h200/run6-ff46f2f/vit.txt) ViT-B/16's step at
// batch 32 (197 tokens) took about half the time with the GEMMs; shorter
// sequences have not been timed.
const defaultEncGEMMMinTokens = 64

// EncoderAttention runs one of two paths: the batched GEMMs
// (encoderAttentionGEMM) for sequences of at least encGEMMMinTokens tokens
// where a (sequence, head) pair's scores fit encScoreBytes, else
// encoder_attention, the exact kernel (the CPU backend's bits).
func (b *Backend) EncoderAttention(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	defer b.enter()()
	n := seqs * tokens * heads * hd
	need(seqs >= 0 && tokens >= 0 && heads >= 0 && hd >= 0 && out.Len() >= n && q.Len() >= n && k.Len() >= n && v.Len() >= n,
		"EncoderAttention: %d sequences of %d tokens, %d heads of %d, with out, q, k, v of %d, %d, %d, %d floats",
		seqs, tokens, heads, hd, out.Len(), q.Len(), k.Len(), v.Len())
	need(tokens*4 <= b.maxShm && tokens <= 65535 && heads <= 65535 && seqs <= 65535,
		"EncoderAttention: %d tokens, %d heads, %d sequences exceed a launch's shared memory or grid", tokens, heads, seqs)
	if n == 0 {
		return
	}
	if b.encGEMMMinTokens > 0 && tokens >= b.encGEMMMinTokens && b.encGroup(tokens, seqs*heads) > 0 {
		b.encoderAttentionGEMM(out, q, k, v, seqs, tokens, heads, hd, scale)
		return
	}
	b.launch("encoder_attention", [3]uint32{uint32(tokens), uint32(heads), uint32(seqs)}, 128, uint32(4*tokens),
		devPtr(dbuf(out).ptr), devPtr(dbuf(q).ptr), devPtr(dbuf(k).ptr), devPtr(dbuf(v).ptr),
		i32Arg(tokens), i32Arg(heads), i32Arg(hd), f32Arg(scale))
}

// encGroup is how many of pairs (sequence, head) pairs encoderAttentionGEMM
// takes at a time: as many as fit the score bound (encScoreBytes, or
// attnGEMMMaxBytes by default) and a grid's 65535 rows; 0 where not even
// one pair's tokens × tokens scores fit.
func (b *Backend) encGroup(tokens, pairs int) int {
	bound := b.encScoreBytes
	if bound <= 0 {
		bound = attnGEMMMaxBytes
	}
	return min(pairs, bound/(4*tokens*tokens), 65535)
}

// encoderAttentionGEMM computes EncoderAttention as PyTorch's eager
// attention does, over a group of (sequence s, head h) pairs at a time
// (encGroup; one group for ViT-B/16 at batch 32): the raw scores q·kᵀ by
// one batched cuBLAS GEMM, encoder_softmax (scale, then attention_softmax's
// softmax), then p·V by a second batched GEMM. q, k, v and out are
// [seqs·tokens][heads·hd] row-major, so a pair's block of tokens rows of hd
// floats has the row stride width = heads·hd; read column-major, it is the
// transposed block (hd × tokens, leading dimension width). So scoresᵀ
// (tokens × tokens, column-major: the scores row-major) = kᵀᵀ·qᵀ, and
// outᵀ (hd × tokens) = vᵀ·scoresᵀ. The GEMMs sum in cuBLAS's order: the
// outputs are within float32 rounding of the CPU backend's, not its bits,
// and the same run to run.
func (b *Backend) encoderAttentionGEMM(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	pairs, width := seqs*heads, heads*hd
	g := b.encGroup(tokens, pairs)
	groups := (pairs + g - 1) / g
	scores := b.malloc(uint64(4 * g * tokens * tokens))
	defer b.recycle(scores)
	// Per group, five arrays of g pointers: k, q, scores, v, out.
	ptrs := make([]uint64, 5*g*groups)
	qp, kp, vp, op := dbuf(q).ptr, dbuf(k).ptr, dbuf(v).ptr, dbuf(out).ptr
	for i := range pairs {
		s, h := i/heads, i%heads
		at := 4 * uint64(s*tokens*width+h*hd)
		p := ptrs[5*g*(i/g):]
		j := i % g
		p[j], p[g+j], p[2*g+j], p[3*g+j], p[4*g+j] = kp+at, qp+at, scores+4*uint64(j*tokens*tokens), vp+at, op+at
	}
	b.grow(&b.attnPtrs, uint64(8*len(ptrs)))
	b.upload(b.attnPtrs.ptr, unsafe.Pointer(&ptrs[0]), uint64(8*len(ptrs)))
	for gi := range groups {
		n := min(g, pairs-gi*g)
		arr := func(a int) uint64 { return b.attnPtrs.ptr + uint64(8*(5*gi+a)*g) }
		if err := b.dev.sgemmBatched(opT, opN, tokens, tokens, hd, arr(0), width, arr(1), width, arr(2), tokens, n, false); err != nil {
			b.fail(err)
		}
		b.launch("encoder_softmax", [3]uint32{uint32(tokens), uint32(n), 1}, 128, uint32(4*tokens),
			devPtr(scores), i32Arg(tokens), f32Arg(scale))
		if err := b.dev.sgemmBatched(opN, opN, hd, tokens, tokens, arr(3), width, arr(2), tokens, arr(4), width, n, false); err != nil {
			b.fail(err)
		}
	}
}
