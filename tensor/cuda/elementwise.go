// Element-wise ops, RMSNorm, RoPE and row gathers: one launch of this
// package's kernels each (kernels/).

package cuda

import "github.com/meazo-go/meazo/tensor"

func (b *Backend) Add(y, x tensor.Buf) {
	defer b.enter()()
	n := y.Len()
	need(x.Len() >= n, "Add: %d floats from %d", n, x.Len())
	b.launch("add", blocks1D(n), 256, 0, devPtr(dbuf(y).ptr), devPtr(dbuf(x).ptr), i64Arg(n))
}

func (b *Backend) AddScaled(y, x tensor.Buf, s float32) {
	defer b.enter()()
	n := y.Len()
	need(x.Len() >= n, "AddScaled: %d floats from %d", n, x.Len())
	b.launch("add_scaled", blocks1D(n), 256, 0, devPtr(dbuf(y).ptr), devPtr(dbuf(x).ptr), f32Arg(s), i64Arg(n))
}

func (b *Backend) SiLUMul(gate, up tensor.Buf) {
	defer b.enter()()
	n := gate.Len()
	need(up.Len() >= n, "SiLUMul: %d floats with %d", n, up.Len())
	b.launch("silu_mul", blocks1D(n), 256, 0, devPtr(dbuf(gate).ptr), devPtr(dbuf(up).ptr), i64Arg(n))
}

// narrowNorm is the widest row RMSNorm gives a warp (rms_norm_narrow)
// rather than a block of 256 threads (rms_norm).
const narrowNorm = 256

func (b *Backend) RMSNorm(dst, x, w tensor.Buf, rows, n int, eps float32) {
	defer b.enter()()
	need(x.Len() >= rows*n && dst.Len() >= rows*n && w.Len() >= n, "RMSNorm: %d rows of %d with x, dst, weight of %d, %d, %d floats", rows, n, x.Len(), dst.Len(), w.Len())
	if rows == 0 || n == 0 {
		return
	}
	if n <= narrowNorm {
		b.launch("rms_norm_narrow", [3]uint32{uint32((rows + 7) / 8), 1, 1}, 256, 0, devPtr(dbuf(dst).ptr), devPtr(dbuf(x).ptr), devPtr(dbuf(w).ptr),
			i32Arg(rows), i32Arg(n), f32Arg(eps))
		return
	}
	b.launch("rms_norm", [3]uint32{uint32(rows), 1, 1}, 256, 0, devPtr(dbuf(dst).ptr), devPtr(dbuf(x).ptr), devPtr(dbuf(w).ptr), i32Arg(n), f32Arg(eps))
}

func (b *Backend) RoPE(x tensor.Buf, rows, heads, hd int, cos, sin tensor.Buf, tableRows int) {
	defer b.enter()()
	need(tableRows > 0 && cos.Len() >= tableRows*hd/2 && sin.Len() >= tableRows*hd/2 && x.Len() >= rows*heads*hd,
		"RoPE: %d rows of %d heads of %d, %d table rows, with x, cos, sin of %d, %d, %d floats", rows, heads, hd, tableRows, x.Len(), cos.Len(), sin.Len())
	if rows*heads*hd == 0 {
		return
	}
	// A thread per pair of a row (hd/2 of them), as many rows as fit in 256
	// threads: the kernel finds its row and pair from that shape.
	half := hd / 2
	need(half > 0 && half <= 1024, "RoPE: heads of %d", hd)
	perBlock := max(1, 256/half)
	b.launch("rope", [3]uint32{uint32((rows + perBlock - 1) / perBlock), 1, 1}, uint32(perBlock*half), 0, devPtr(dbuf(x).ptr), i64Arg(rows), i32Arg(heads), i32Arg(hd),
		devPtr(dbuf(cos).ptr), devPtr(dbuf(sin).ptr), i32Arg(tableRows))
}

// RMSNormRoPE implements tensor.NormRoPE: rms_norm_rope, a warp per head,
// for heads of at most narrowNorm (Qwen3's 128); wider heads take RMSNorm
// then RoPE.
func (b *Backend) RMSNormRoPE(x, w tensor.Buf, rows, heads, hd int, eps float32, cos, sin tensor.Buf, tableRows int) {
	if hd > narrowNorm || hd%2 != 0 {
		b.RMSNorm(x, x, w, rows*heads, hd, eps)
		b.RoPE(x, rows, heads, hd, cos, sin, tableRows)
		return
	}
	defer b.enter()()
	need(x.Len() >= rows*heads*hd && w.Len() >= hd && tableRows > 0 && cos.Len() >= tableRows*hd/2 && sin.Len() >= tableRows*hd/2,
		"RMSNormRoPE: %d rows of %d heads of %d, %d table rows, with x, weight, cos, sin of %d, %d, %d, %d floats",
		rows, heads, hd, tableRows, x.Len(), w.Len(), cos.Len(), sin.Len())
	if rows*heads*hd == 0 {
		return
	}
	b.launch("rms_norm_rope", [3]uint32{uint32((rows*heads + 7) / 8), 1, 1}, 256, 0, devPtr(dbuf(x).ptr), devPtr(dbuf(w).ptr),
		i64Arg(rows), i32Arg(heads), i32Arg(hd), f32Arg(eps), devPtr(dbuf(cos).ptr), devPtr(dbuf(sin).ptr), i32Arg(tableRows))
}

func (b *Backend) Gather(dst, src tensor.Buf, width int, ids []int) {
	defer b.enter()()
	need(dst.Len() >= len(ids)*width, "Gather: %d rows of %d into %d floats", len(ids), width, dst.Len())
	for _, id := range ids {
		need(id >= 0 && (id+1)*width <= src.Len(), "Gather: row %d of width %d from %d floats", id, width, src.Len())
	}
	if len(ids) == 0 || width == 0 {
		return
	}
	p := b.uploadInts(&b.ids, ids)
	b.launch("gather_rows", [3]uint32{uint32(len(ids)), 1, 1}, 256, 0, devPtr(dbuf(dst).ptr), devPtr(dbuf(src).ptr), i32Arg(width), devPtr(p))
}

func (b *Backend) LayerNorm(dst, x, w, bias tensor.Buf, rows, n int, eps float32) {
	defer b.enter()()
	need(x.Len() >= rows*n && dst.Len() >= rows*n && w.Len() >= n && bias.Len() >= n,
		"LayerNorm: %d rows of %d with x, dst, weight, bias of %d, %d, %d, %d floats", rows, n, x.Len(), dst.Len(), w.Len(), bias.Len())
	if rows == 0 || n == 0 {
		return
	}
	b.launch("layer_norm", [3]uint32{uint32(rows), 1, 1}, 256, 0, devPtr(dbuf(dst).ptr), devPtr(dbuf(x).ptr), devPtr(dbuf(w).ptr),
		devPtr(dbuf(bias).ptr), i32Arg(n), f32Arg(eps))
}

func (b *Backend) AddBias(y, bias tensor.Buf, rows, n int) {
	defer b.enter()()
	need(rows >= 0 && n >= 0 && y.Len() >= rows*n && bias.Len() >= n, "AddBias: %d rows of %d with y, bias of %d, %d floats", rows, n, y.Len(), bias.Len())
	if rows*n == 0 {
		return
	}
	b.launch("add_bias", blocks1D(rows*n), 256, 0, devPtr(dbuf(y).ptr), devPtr(dbuf(bias).ptr), i32Arg(n), i64Arg(rows*n))
}

func (b *Backend) ReLU(x tensor.Buf) {
	defer b.enter()()
	b.launch("relu", blocks1D(x.Len()), 256, 0, devPtr(dbuf(x).ptr), i64Arg(x.Len()))
}
