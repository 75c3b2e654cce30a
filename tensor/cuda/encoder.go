package cuda

import "github.com/meazo-go/meazo/tensor"

// The operations of a ViT encoder block beyond OPT's (kernels/gelu.cu,
// kernels/encoder_attention.cu).

func (b *Backend) GELU(x tensor.Buf) {
	defer b.enter()()
	if x.Len() == 0 {
		return
	}
	b.launch("gelu", blocks1D(x.Len()), 256, 0, devPtr(dbuf(x).ptr), i64Arg(x.Len()))
}

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
	b.launch("encoder_attention", [3]uint32{uint32(tokens), uint32(heads), uint32(seqs)}, 128, uint32(4*tokens),
		devPtr(dbuf(out).ptr), devPtr(dbuf(q).ptr), devPtr(dbuf(k).ptr), devPtr(dbuf(v).ptr),
		i32Arg(tokens), i32Arg(heads), i32Arg(hd), f32Arg(scale))
}
