// Frozen matrices in device memory (float32 or bfloat16) and the embedding
// lookup that reads their rows.

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

// weight is a frozen matrix W [n][k] in device memory, row-major, as
// float32 or as bfloat16 bits.
type weight struct {
	n, k int
	ptr  uint64
	bf16 bool
}

func (w *weight) Shape() (int, int) { return w.n, w.k }

func dweight(x tensor.Weight) *weight {
	w, ok := x.(*weight)
	if !ok {
		panic(fmt.Sprintf("cuda: CUDA backend given a %T weight", x))
	}
	return w
}

func (b *Backend) Pack(w []float32, n, k int, bf16 bool) tensor.Weight {
	if len(w) != n*k {
		panic(fmt.Sprintf("cuda: Pack of %d values as %d×%d", len(w), n, k))
	}
	defer b.enter()()
	out := &weight{n: n, k: k, bf16: bf16}
	if bf16 {
		h := make([]uint16, len(w))
		for i, x := range w {
			h[i] = toBF16(x)
		}
		out.ptr = b.allocWeight(uint64(2 * len(h)))
		if len(h) > 0 {
			b.upload(out.ptr, unsafe.Pointer(&h[0]), uint64(2*len(h)))
		}
	} else {
		out.ptr = b.allocWeight(uint64(4 * len(w)))
		if len(w) > 0 {
			b.upload(out.ptr, unsafe.Pointer(&w[0]), uint64(4*len(w)))
		}
	}
	b.weights++
	return out
}

// toBF16 rounds to the nearest bfloat16, ties to even (as the CPU
// backend's PackBF16; exact for a bf16 checkpoint's values); NaN stays NaN.
func toBF16(f float32) uint16 {
	u := *(*uint32)(unsafe.Pointer(&f))
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

func (b *Backend) FreeWeight(x tensor.Weight) {
	defer b.enterRelease()()
	p := dweight(x).ptr
	bytes, ok := b.live[p]
	if !ok {
		panic("cuda: FreeWeight of a weight that is not alive (freed twice)")
	}
	delete(b.live, p)
	b.devFree(p, bytes)
	b.weights--
}

// allocWeight returns device memory of exactly bytes for a weight: weights
// live as long as their model, so they bypass the size classes and the
// cache (up to 12.5 % of a model's size would be lost to rounding).
func (b *Backend) allocWeight(bytes uint64) uint64 {
	bytes = max(bytes, 4)
	p := b.alloc(bytes)
	b.live[p] = bytes
	return p
}

func (b *Backend) Rows(dst tensor.Buf, x tensor.Weight, ids []int) {
	defer b.enter()()
	w, d := dweight(x), dbuf(dst)
	need(d.n >= len(ids)*w.k, "Rows: %d rows of %d into %d floats", len(ids), w.k, d.n)
	if len(ids) == 0 || w.k == 0 {
		return
	}
	for _, id := range ids {
		if id < 0 || id >= w.n {
			panic(fmt.Sprintf("cuda: Rows: row %d of a %d-row matrix", id, w.n))
		}
	}
	p := b.uploadInts(&b.ids, ids)
	name := "gather_rows"
	if w.bf16 {
		name = "gather_rows_bf16"
	}
	b.launch(name, [3]uint32{uint32(len(ids)), 1, 1}, 256, 0, devPtr(d.ptr), devPtr(w.ptr), i32Arg(w.k), devPtr(p))
}
