// The results that come back to the host: per-token cross-entropies and
// argmax ids.

package cuda

import (
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

func (b *Backend) CrossEntropy(logits tensor.Buf, width int, ids, targets []int) []float64 {
	defer b.enter()()
	out := make([]float64, len(ids))
	need(len(targets) == len(ids), "CrossEntropy: %d rows, %d targets", len(ids), len(targets))
	for i, id := range ids {
		need(id >= 0 && (id+1)*width <= logits.Len() && targets[i] >= 0 && targets[i] < width,
			"CrossEntropy: row %d, target %d, of logits of %d floats and width %d", id, targets[i], logits.Len(), width)
	}
	if len(ids) == 0 {
		return out
	}
	pi, pt := b.uploadInts(&b.ids, ids), b.uploadInts(&b.ids2, targets)
	b.grow(&b.out, uint64(8*len(ids)))
	b.launch("cross_entropy", [3]uint32{uint32(len(ids)), 1, 1}, 256, 0, devPtr(b.out.ptr), devPtr(dbuf(logits).ptr), i32Arg(width), devPtr(pi), devPtr(pt))
	b.download(unsafe.Pointer(&out[0]), b.out.ptr, uint64(8*len(out)))
	return out
}

func (b *Backend) Argmax(x tensor.Buf, rows, width int) []int {
	defer b.enter()()
	out := make([]int, rows)
	need(x.Len() >= rows*width, "Argmax: %d rows of %d from %d floats", rows, width, x.Len())
	if rows == 0 || width == 0 {
		return out
	}
	b.grow(&b.out, uint64(4*rows))
	b.launch("argmax", [3]uint32{uint32(rows), 1, 1}, 256, 0, devPtr(b.out.ptr), devPtr(dbuf(x).ptr), i32Arg(width))
	h := make([]int32, rows)
	b.download(unsafe.Pointer(&h[0]), b.out.ptr, uint64(4*rows))
	for i, v := range h {
		out[i] = int(v)
	}
	return out
}
