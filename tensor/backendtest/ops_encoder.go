package backendtest

import (
	"math"
	"testing"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// encoderCases are the checks of the ops of a ViT encoder block beyond
// OPT's: the exact GELU and attention without a mask or cache.
func encoderCases() []opCase {
	return []opCase{
		{"GELU", func(b tensor.Backend, in *inputs) []float32 {
			v := in.vec(5000, 3)
			v[0], v[1], v[2], v[3] = float32(math.Copysign(0, -1)), 40, -40, 1e-30
			x := b.FromHost(v)
			b.GELU(x.Slice(0, 4999)) // the last element stays
			return down(b, x)
		}},
		{"AddBiasGELU", func(b tensor.Backend, in *inputs) []float32 {
			const rows, n = 9, 300
			x, bias := b.FromHost(in.vec(rows*n+3, 3)), b.FromHost(in.vec(n+1, 1))
			addBiasGELU(b, x.Slice(3, 3+rows*n), bias.Slice(1, 1+n), rows, n) // views at offsets
			b.Free(bias)
			return down(b, x)
		}},
		{"AddBiasResidual", func(b tensor.Backend, in *inputs) []float32 {
			const rows, n = 7, 300
			y, x, bias := b.FromHost(in.vec(rows*n+2, 1)), b.FromHost(in.vec(rows*n, 1)), b.FromHost(in.vec(n, 0.5))
			addBiasResidual(b, y.Slice(2, 2+rows*n), x, bias, rows, n)
			b.Free(bias)
			return append(down(b, y), down(b, x)...) // x as it was
		}},
		{"EncoderAttention", func(b tensor.Backend, in *inputs) []float32 {
			const seqs, tokens, heads, hd = 2, 17, 3, 8 // a CLS token and 16 patches
			n := seqs * tokens * heads * hd
			q, k, v := b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 1)), b.FromHost(in.vec(n, 1))
			out := b.Alloc(n + 5)
			b.EncoderAttention(out.Slice(5, 5+n), q, k, v, seqs, tokens, heads, hd, float32(1/math.Sqrt(hd)))
			b.Free(q, k, v)
			return down(b, out)
		}},
		{"EncoderAttentionLong", func(b tensor.Backend, in *inputs) []float32 {
			const seqs, tokens, heads, hd = 1, 197, 2, 64 // ViT-B/16's 197 tokens: more than a block's threads
			n := seqs * tokens * heads * hd
			q, k, v := b.FromHost(in.vec(n, 2)), b.FromHost(in.vec(n, 2)), b.FromHost(in.vec(n, 1))
			out := b.Alloc(n)
			b.EncoderAttention(out, q, k, v, seqs, tokens, heads, hd, 0.125)
			b.Free(q, k, v)
			return down(b, out)
		}},
		{"EncoderAttentionBatch", func(b tensor.Backend, in *inputs) []float32 {
			const seqs, tokens, heads, hd = 3, 197, 2, 16 // six (sequence, head) pairs of ViT-B/16's length
			n := seqs * tokens * heads * hd
			q, k, v := b.FromHost(in.vec(n, 1.5)), b.FromHost(in.vec(n, 1.5)), b.FromHost(in.vec(n, 1))
			out := b.Alloc(n)
			b.EncoderAttention(out, q, k, v, seqs, tokens, heads, hd, 0.25)
			b.Free(q, k, v)
			return down(b, out)
		}},
	}
}

// addBiasGELU is x = GELU(x + bias): in one call where b is a
// tensor.BiasFuser, else as AddBias then GELU (the CPU's reference).
func addBiasGELU(b tensor.Backend, x, bias tensor.Buf, rows, n int) {
	if f, ok := b.(tensor.BiasFuser); ok {
		f.AddBiasGELU(x, bias, rows, n)
		return
	}
	b.AddBias(x, bias, rows, n)
	b.GELU(x)
}

// addBiasResidual is y += x + bias, x unchanged: in one call where b is a
// tensor.BiasFuser, else as AddBias on a copy of x then Add (the CPU's
// reference).
func addBiasResidual(b tensor.Backend, y, x, bias tensor.Buf, rows, n int) {
	if f, ok := b.(tensor.BiasFuser); ok {
		f.AddBiasResidual(y, x, bias, rows, n)
		return
	}
	t := b.Alloc(rows * n)
	b.Copy(t, x)
	b.AddBias(t, bias, rows, n)
	b.Add(y, t)
	b.Free(t)
}

// EncoderOps is Ops for the encoder's ops alone (a backend's encoder
// attention paths, each forced in turn): each against the CPU backend
// within tol, and a second run bit-identical to the first.
func EncoderOps(t *testing.T, b tensor.Backend, tol Tolerance) {
	ref := cpu.New(cpu.Options{})
	for _, c := range encoderCases() {
		t.Run(c.name, func(t *testing.T) { checkOp(t, b, ref, c, tol) })
	}
}
