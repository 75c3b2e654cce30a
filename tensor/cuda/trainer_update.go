// Full-parameter ZO on the GPU (tensor.Trainer), the writing side: a
// weight or vector moved in place by the optimizer's rule (zo_update), and
// the optimizer's state beside it.

package cuda

import (
	"fmt"
	"math"
	"slices"
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
// squares the host adds (in block order): 32 KiB of them at most. The grid
// depends on the element count alone, so the sum is the same run to run.
const maxUpdateBlocks = 4096

// squaresCap is the partial sums the device keeps between reads (4 MiB):
// an update's are read back with the next UpdateSquares, or when the next
// update would not fit, so a group's updates cost one wait for the device
// (a wait per tensor was about 40 µs of an H200's 18 ms update of
// Llama-3.2-1B's 146 tensors, docs/bench/2026-11-28-h200-full/).
const squaresCap = 128 * maxUpdateBlocks

// squares are the partial sums of squares of the updates since the last
// UpdateSquares: those read back, and those still on the device.
type squares struct {
	dev    devArray // squaresCap float64, written by zo_update
	blocks []int    // each unread update's partial sums, in call order
	used   int      // partial sums written to dev since the last read
	sum    float64  // the updates read back, added in call order
	limit  int      // partial sums kept before a read (0: squaresCap; the tests set fewer)
}

// UpdateWeight implements tensor.Trainer.
func (b *Backend) UpdateWeight(wt, mt, vt tensor.Weight, u *tensor.Update) {
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
	b.update(w.ptr, state("m", mt), state("v", vt), w.n*w.k, storage, u)
}

// UpdateVector implements tensor.Trainer.
func (b *Backend) UpdateVector(x, mt, vt tensor.Buf, bf16 bool, u *tensor.Update) {
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
	b.update(dbuf(x).ptr, state("m", mt), state("v", vt), n, storage, u)
}

// UpdateSquares implements tensor.Trainer: the partial sums still on the
// device read back in one transfer.
func (b *Backend) UpdateSquares() float64 {
	defer b.enter()()
	b.readSquares()
	ss := b.squares.sum
	b.squares.sum = 0
	return ss
}

// readSquares reads back the partial sums of the updates not yet read and
// adds each update's (in block order, from 0) to the sum, in call order.
func (b *Backend) readSquares() {
	sq := &b.squares
	if sq.used == 0 {
		sq.blocks = sq.blocks[:0]
		return
	}
	// Read or not (a failed read panics), these updates are done with: the
	// next ones start afresh.
	part, blocks := make([]float64, sq.used), slices.Clone(sq.blocks)
	sq.used, sq.blocks = 0, sq.blocks[:0]
	b.download(unsafe.Pointer(&part[0]), sq.dev.ptr, uint64(8*len(part)))
	for _, n := range blocks {
		var ss float64
		for _, p := range part[:n] {
			ss += p
		}
		sq.sum += ss
		part = part[n:]
	}
}

// update runs zo_update over n elements at theta (stored as storage says)
// with the state m and v (0: none); its blocks' partial sums of squares
// wait on the device for readSquares.
func (b *Backend) update(theta, m, v uint64, n, storage int, u *tensor.Update) {
	if err := u.Check(); err != nil {
		panic(fmt.Sprintf("cuda: %v", err))
	}
	checkNoise(&tensor.Noise{Dist: u.Dist, Offset: u.Offset})
	r := u.Rule
	need(r.Kind != update.Adam || v != 0, "Adam update without its state v")
	need(r.Kind != update.RAdaZO || m != 0 && v != 0, "R-AdaZO update without its state m and v")
	if n == 0 {
		return
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
	b.uploadDirs(table)
	blocks := min((quads(u.Offset, n)+255)/256, maxUpdateBlocks)
	sq := &b.squares
	limit := sq.limit
	if limit <= 0 {
		limit = squaresCap
	}
	if sq.used > 0 && sq.used+blocks > limit {
		b.readSquares()
	}
	b.grow(&sq.dev, uint64(8*max(limit, sq.used+blocks))) // a new array only when none is unread
	partials := sq.dev.ptr + uint64(8*sq.used)
	sq.blocks, sq.used = append(sq.blocks, blocks), sq.used+blocks
	rs := u.Rounding
	b.launch("zo_update", [3]uint32{uint32(blocks), 1, 1}, 256, 0, devPtr(theta), devPtr(m), devPtr(v), devPtr(partials),
		devPtr(b.dirs.ptr), i32Arg(len(u.Streams)), i32Arg(int32(u.Dist)), i32Arg(storage), i64Arg(n), i64Arg(u.Offset),
		i32Arg(int32(r.Kind)), f64Arg(r.LR), f64Arg(r.WeightDecay), f64Arg(r.Momentum), f64Arg(r.Beta1), f64Arg(r.Beta2),
		f64Arg(r.Eps), f64Arg(r.C1), f64Arg(r.C2), i64Arg(int64(rs.Seed)), i32Arg(int32(rs.Step)), i32Arg(int32(rs.Dir)))
}

// uploadDirs puts an update's table of directions on the device, unless
// the last update's was the same: a group's tensors share their step's
// directions, so a layer's updates upload them once.
func (b *Backend) uploadDirs(table []uint64) {
	if b.dirs.ptr != 0 && slices.Equal(table, b.dirsTable) {
		return
	}
	b.dirsTable = nil // until the upload is done
	b.grow(&b.dirs, uint64(8*len(table)))
	b.upload(b.dirs.ptr, unsafe.Pointer(&table[0]), uint64(8*len(table)))
	b.dirsTable = table
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
