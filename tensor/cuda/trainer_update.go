// Full-parameter ZO on the GPU (tensor.Trainer), the writing side: a
// weight or vector moved in place by the optimizer's rule (zo_update), and
// the optimizer's state beside it.

package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/update"
)

// How zo_update finds the elements (kernels/zo_update.cu's STORE_*).
const (
	storeF32       = 0 // float32
	storeBF16      = 1 // bfloat16 bits
	storeBF16InF32 = 2 // bfloat16 values held as float32 (UpdateVector with bf16)
)

// maxUpdateBlocks bounds zo_update's grid, and so the partial sums of
// squares the host adds (in block order, after the kernel): 32 KiB of
// them at most. The grid depends on the element count alone, so the sum
// is the same run to run.
const maxUpdateBlocks = 4096

// UpdateWeight implements tensor.Trainer.
func (b *Backend) UpdateWeight(wt, mt, vt tensor.Weight, u *tensor.Update) float64 {
	defer b.enter()()
	w := dweight(wt)
	state := func(what string, s tensor.Weight) uint64 {
		if s == nil {
			return 0
		}
		d := dweight(s)
		need(d.n == w.n && d.k == w.k && !d.bf16, "UpdateWeight: %s state of %d×%d (bf16 %v) for a %d×%d weight", what, d.n, d.k, d.bf16, w.n, w.k)
		return d.ptr
	}
	storage := storeF32
	if w.bf16 {
		storage = storeBF16
	}
	return b.update(w.ptr, state("m", mt), state("v", vt), w.n*w.k, storage, u)
}

// UpdateVector implements tensor.Trainer.
func (b *Backend) UpdateVector(x, mt, vt tensor.Buf, bf16 bool, u *tensor.Update) float64 {
	defer b.enter()()
	n := x.Len()
	state := func(what string, s tensor.Buf) uint64 {
		if s == nil {
			return 0
		}
		need(s.Len() >= n, "UpdateVector: %s state of %d floats for %d", what, s.Len(), n)
		return dbuf(s).ptr
	}
	storage := storeF32
	if bf16 {
		storage = storeBF16InF32
	}
	return b.update(dbuf(x).ptr, state("m", mt), state("v", vt), n, storage, u)
}

// update runs zo_update over n elements at theta (stored as storage says)
// with the state m and v (0: none) and returns Σ Δθ²: the blocks' partial
// sums, added here in block order.
func (b *Backend) update(theta, m, v uint64, n, storage int, u *tensor.Update) float64 {
	if err := u.Check(); err != nil {
		panic(fmt.Sprintf("cuda: %v", err))
	}
	checkNoise(&tensor.Noise{Dist: u.Dist, Offset: u.Offset})
	r := u.Rule
	need(r.Kind != update.Adam || v != 0, "Adam update without its state v")
	need(r.Kind != update.RAdaZO || m != 0 && v != 0, "R-AdaZO update without its state m and v")
	if n == 0 {
		return 0
	}
	// The directions go in device memory, 32 bytes each, not in the
	// kernel's parameters (4 KiB at most): any number of them.
	table := make([]uint64, 4*len(u.Streams))
	for j, s := range u.Streams {
		table[4*j] = s.Seed
		table[4*j+1] = uint64(s.Step) | uint64(s.Dir)<<32
		table[4*j+2] = math.Float64bits(u.Norms[j])
		table[4*j+3] = math.Float64bits(u.Weights[j])
	}
	b.grow(&b.dirs, uint64(8*len(table)))
	b.upload(b.dirs.ptr, unsafe.Pointer(&table[0]), uint64(8*len(table)))
	blocks := min((quads(u.Offset, n)+255)/256, maxUpdateBlocks)
	b.grow(&b.partials, uint64(8*blocks))
	rs := u.Rounding
	b.launch("zo_update", [3]uint32{uint32(blocks), 1, 1}, 256, 0, devPtr(theta), devPtr(m), devPtr(v), devPtr(b.partials.ptr),
		devPtr(b.dirs.ptr), i32Arg(len(u.Streams)), i32Arg(int32(u.Dist)), i32Arg(storage), i64Arg(n), i64Arg(u.Offset),
		i32Arg(int32(r.Kind)), f64Arg(r.LR), f64Arg(r.WeightDecay), f64Arg(r.Momentum), f64Arg(r.Beta1), f64Arg(r.Beta2),
		f64Arg(r.Eps), f64Arg(r.C1), f64Arg(r.C2), i64Arg(int64(rs.Seed)), i32Arg(int32(rs.Step)), i32Arg(int32(rs.Dir)))
	part := make([]float64, blocks)
	b.download(unsafe.Pointer(&part[0]), b.partials.ptr, uint64(8*blocks))
	var ss float64
	for _, p := range part {
		ss += p
	}
	return ss
}

// NewState implements tensor.Trainer: a zeroed float32 matrix of w's
// shape, row-major like w, allocated as a weight (it lives as long as the
// training).
func (b *Backend) NewState(wt tensor.Weight) tensor.Weight {
	defer b.enter()()
	w := dweight(wt)
	out := &weight{n: w.n, k: w.k}
	out.ptr = b.allocWeight(uint64(4 * w.n * w.k))
	if w.n*w.k > 0 {
		if err := b.dev.memsetD32(out.ptr, 0, uint64(w.n*w.k)); err != nil {
			b.fail(err)
		}
	}
	b.weights++
	return out
}
