// Full-parameter ZO on the GPU (tensor.Trainer), the reading side: weights
// read as θ + s·z without being written. trainer_update.go holds the
// in-place updates.

package cuda

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
)

// A product by a perturbed weight, W + s·εZ, is cuBLAS's SGEMM by a copy of
// it formed in a scratch matrix from W and the noise drawn again
// (perturb_copy), never by W written: the weights change only in an update,
// so nothing has to be restored and a bfloat16 weight keeps its whole
// perturbation (formed in float32). The copy is made a block of W's rows
// at a time, perturbChunk elements at most, and each block's product is
// the block of y's columns it gives (gemmCols): the scratch is at most two
// such blocks (the + and − variants of a direction, formed together from one
// draw of z), 64 MiB by default, whatever the size of the matrix. An LM head
// of 151,936 × 4,096 (Qwen3-8B's) is formed in 75 blocks of 2,048 rows,
// rather than as a 2.5 GB copy.
//
// The bits: a block of rows gives the columns of y that the whole matrix
// would, each a dot product over all of K; on the emulator, whose GEMM sums
// each dot product in order, they are MatMul's bits whatever the blocks. On
// a GPU cuBLAS chooses its kernel (tiles, split-K) by the shape, so a
// matrix cut into blocks may get another kernel than MatMul uses for the
// whole, and its products may then differ from MatMul's in the last bits
// (within float32 GEMM tolerance, as MatMul's own results at another row
// count do). A matrix of at most perturbChunk elements (every layer matrix
// of Qwen3-0.6B, Llama-3.2-1B's attention, Qwen3-8B's k and v) is one
// block: a call of MatMul's shape on the perturbed matrix (a segment's rows
// of x and y at an offset, which cuBLAS may also choose kernels by).
// TestGPUBlockedProduct logs on a GPU how many elements blocks change.

// defaultPerturbChunk is the most elements of a weight formed perturbed at
// once (Backend.perturbChunk; the tests set smaller blocks): 32 MiB of
// float32, a block whose product still keeps a GPU busy (2,048 rows of K
// = 4,096 against the batch's rows).
const defaultPerturbChunk = 1 << 23

var _ tensor.Trainer = (*Backend)(nil)

// checkNoise refuses noise the kernels cannot draw.
func checkNoise(n *tensor.Noise) {
	need(n.Dist >= noise.Normal && n.Dist <= noise.Ternary, "noise distribution %v", n.Dist)
	need(n.Offset >= 0, "noise at offset %d", n.Offset)
}

// noiseArgs are the kernel arguments that name the noise n of elements
// from e0 on of its stream: seed, step, direction, distribution, norm, e0.
func noiseArgs(n *tensor.Noise, e0 int64) []any {
	return []any{i64Arg(int64(n.Stream.Seed)), i32Arg(int32(n.Stream.Step)), i32Arg(int32(n.Stream.Dir)),
		i32Arg(int32(n.Dist)), f64Arg(n.Norm), i64Arg(e0)}
}

// quads is the number of Philox blocks that elements [e0, e0+n) of a
// stream touch: the threads of a kernel that draws their noise.
func quads(e0 int64, n int) int {
	if n <= 0 {
		return 0
	}
	return int((e0+int64(n)-1)>>2 - e0>>2 + 1)
}

// boolArg is a flag as a kernel's int.
func boolArg(v bool) i32Arg {
	if v {
		return 1
	}
	return 0
}

// rowRange is a segment's rows of x (and of y): [lo, lo+rows).
type rowRange struct{ lo, rows int }

// perturbJob is one way some segments read W: as it is (noise nil), or
// perturbed by the noise with one or two scales (the + and − variants of
// a direction), formed in one launch; ranges[i] are the rows that read
// scale i.
type perturbJob struct {
	noise  *tensor.Noise
	scales []float64
	ranges [][]rowRange
}

// perturbJobs groups the segments by how they read W: the unperturbed
// first, then each noise (in order of first use) with its scales two at a
// time. Empty segments read nothing.
func perturbJobs(segs []tensor.Segment) []perturbJob {
	var plain []rowRange
	var byNoise []*perturbJob // each noise with all its scales
	lo := 0
	for _, s := range segs {
		r := rowRange{lo, s.Rows}
		lo += s.Rows
		switch {
		case s.Rows == 0:
		case s.P == nil:
			plain = append(plain, r)
		default:
			g := jobOf(byNoise, &s.P.Noise)
			if g == nil {
				g = &perturbJob{noise: &s.P.Noise}
				byNoise = append(byNoise, g)
			}
			i := slices.Index(g.scales, s.P.Scale)
			if i < 0 {
				g.scales, g.ranges = append(g.scales, s.P.Scale), append(g.ranges, nil)
				i = len(g.scales) - 1
			}
			g.ranges[i] = append(g.ranges[i], r)
		}
	}
	var jobs []perturbJob
	if plain != nil {
		jobs = append(jobs, perturbJob{ranges: [][]rowRange{plain}})
	}
	for _, g := range byNoise {
		for i := 0; i < len(g.scales); i += 2 {
			hi := min(i+2, len(g.scales))
			jobs = append(jobs, perturbJob{noise: g.noise, scales: g.scales[i:hi], ranges: g.ranges[i:hi]})
		}
	}
	return jobs
}

// jobOf is the job of js reading W perturbed by the noise n, or nil.
func jobOf(js []*perturbJob, n *tensor.Noise) *perturbJob {
	for _, j := range js {
		if *j.noise == *n {
			return j
		}
	}
	return nil
}

// segmentRows is the rows the segments cover.
func segmentRows(segs []tensor.Segment) int {
	rows := 0
	for _, s := range segs {
		need(s.Rows >= 0, "MatMulPerturbed: segment of %d rows", s.Rows)
		if s.P != nil {
			checkNoise(&s.P.Noise)
		}
		rows += s.Rows
	}
	return rows
}

// MatMulPerturbed implements tensor.Trainer: W's rows a block at a time,
// each job's matrix formed in the scratch and multiplied by its rows of x.
func (b *Backend) MatMulPerturbed(y, x tensor.Buf, wt tensor.Weight, segs []tensor.Segment, add bool) {
	defer b.enter()()
	w := dweight(wt)
	rows := segmentRows(segs)
	need(x.Len() >= rows*w.k && y.Len() >= rows*w.n, "MatMulPerturbed: %d rows of %d×%d with x of %d and y of %d floats", rows, w.n, w.k, x.Len(), y.Len())
	yp, xp := dbuf(y).ptr, dbuf(x).ptr
	if rows == 0 || w.n == 0 {
		return
	}
	if w.k == 0 {
		b.gemm(yp, xp, w.ptr, rows, w.n, 0, add, 1) // zeros, or nothing to add
		return
	}
	jobs := perturbJobs(segs)
	chunk := b.chunkRows(w)
	slots := 0 // scratch matrices of a block: one per scale, one for a bfloat16 W read as it is
	for _, j := range jobs {
		slots = max(slots, len(j.scales))
		if j.noise == nil && w.bf16 {
			slots = max(slots, 1)
		}
	}
	var scratch uint64
	slot := slotBytes(chunk * w.k)
	if slots > 0 {
		scratch = b.malloc(uint64(slots) * slot)
		defer b.recycle(scratch)
	}
	for r0 := 0; r0 < w.n; r0 += chunk {
		for i := range jobs {
			b.multiplyBlock(&jobs[i], w, r0, min(chunk, w.n-r0), scratch, slot, yp, xp, add)
		}
	}
}

// slotBytes is the room of one scratch matrix of elems float32, rounded up
// to 256 bytes so that the second starts as aligned as cuMemAlloc's memory
// (cuBLAS may choose its kernel by the operands' alignment).
func slotBytes(elems int) uint64 { return (uint64(4*elems) + 255) &^ 255 }

// chunkRows is how many of w's rows MatMulPerturbed forms at once.
func (b *Backend) chunkRows(w *weight) int { return blockRows(w, b.perturbChunk, defaultPerturbChunk) }

// blockRows is how many of w's rows make a block of at most elems elements
// (0: def), one at least.
func blockRows(w *weight, elems, def int) int {
	if elems <= 0 {
		elems = def
	}
	return min(w.n, max(1, elems/w.k))
}

// multiplyBlock computes columns [r0, r0+n) of y for the rows of job j:
// rows [r0, r0+n) of W as j reads them (formed in scratch, matrices slot
// bytes apart, unless W is float32 and read as it is) times those rows of
// x.
func (b *Backend) multiplyBlock(j *perturbJob, w *weight, r0, n int, scratch, slot, yp, xp uint64, add bool) {
	elems := n * w.k
	elemBytes := 4
	if w.bf16 {
		elemBytes = 2
	}
	src := w.ptr + uint64(elemBytes*r0*w.k)
	var mats [2]uint64
	switch {
	case j.noise == nil && !w.bf16:
		mats[0] = src
	case j.noise == nil:
		mats[0] = scratch
		b.launch("bf16_to_f32", blocks1D(elems), 256, 0, devPtr(scratch), devPtr(src), i64Arg(elems))
	default:
		mats[0] = scratch
		scale1 := 0.0
		if len(j.scales) == 2 {
			mats[1], scale1 = scratch+slot, j.scales[1]
		}
		e0 := j.noise.Offset + int64(r0*w.k)
		args := append([]any{devPtr(mats[0]), devPtr(mats[1]), devPtr(src), boolArg(w.bf16), i64Arg(elems)}, noiseArgs(j.noise, e0)...)
		args = append(args, f64Arg(j.scales[0]), f64Arg(scale1))
		b.launch("perturb_copy", blocks1D(quads(e0, elems)), 256, 0, args...)
	}
	if b.paired && b.pairedProduct(j, mats, w, r0, n, yp, xp, add) {
		return
	}
	for i, ranges := range j.ranges {
		for _, r := range ranges {
			b.gemmCols(yp+uint64(4*(r.lo*w.n+r0)), xp+uint64(4*r.lo*w.k), mats[i], r.rows, n, w.n, w.k, add, 1)
		}
	}
}

// pairedProduct is multiplyBlock's products for a job of two scales (a
// direction's + and − variants) that read one run of rows each, of the
// same count: both as one cublasSgemmBatched of two, each problem the
// gemmCols of its rows, so that a launch has both variants' tiles. It
// reports whether the job was of that kind (else nothing ran).
func (b *Backend) pairedProduct(j *perturbJob, mats [2]uint64, w *weight, r0, n int, yp, xp uint64, add bool) bool {
	if len(j.ranges) != 2 || len(j.ranges[0]) != 1 || len(j.ranges[1]) != 1 || j.ranges[0][0].rows != j.ranges[1][0].rows {
		return false
	}
	lo0, lo1, rows := j.ranges[0][0].lo, j.ranges[1][0].lo, j.ranges[0][0].rows
	// a: the two matrices; b: their rows of x; c: their rows of y at column r0.
	ptrs := []uint64{mats[0], mats[1], xp + uint64(4*lo0*w.k), xp + uint64(4*lo1*w.k),
		yp + uint64(4*(lo0*w.n+r0)), yp + uint64(4*(lo1*w.n+r0))}
	b.grow(&b.pairPtrs, uint64(8*len(ptrs)))
	b.upload(b.pairPtrs.ptr, unsafe.Pointer(&ptrs[0]), uint64(8*len(ptrs)))
	arr := func(i int) uint64 { return b.pairPtrs.ptr + uint64(16*i) }
	if err := b.dev.sgemmBatched(opT, opN, n, rows, w.k, arr(0), w.k, arr(1), w.k, arr(2), w.n, 2, add); err != nil {
		b.fail(err)
	}
	return true
}

// RowsPerturbed implements tensor.Trainer: perturb_rows, a block per row.
func (b *Backend) RowsPerturbed(dst tensor.Buf, wt tensor.Weight, ids []int, p *tensor.Perturbation) {
	if p == nil {
		b.Rows(dst, wt, ids)
		return
	}
	defer b.enter()()
	w, d := dweight(wt), dbuf(dst)
	need(d.n >= len(ids)*w.k, "RowsPerturbed: %d rows of %d into %d floats", len(ids), w.k, d.n)
	checkNoise(&p.Noise)
	for _, id := range ids {
		if id < 0 || id >= w.n {
			panic(fmt.Sprintf("cuda: RowsPerturbed: row %d of a %d-row matrix", id, w.n))
		}
	}
	if len(ids) == 0 || w.k == 0 {
		return
	}
	ip := b.uploadInts(&b.ids, ids)
	args := append([]any{devPtr(d.ptr), devPtr(w.ptr), boolArg(w.bf16), i32Arg(w.k), devPtr(ip)}, noiseArgs(&p.Noise, p.Offset)...)
	b.launch("perturb_rows", [3]uint32{uint32(len(ids)), 1, 1}, 256, 0, append(args, f64Arg(p.Scale))...)
}

// Perturb implements tensor.Trainer: perturb_copy of the vector.
func (b *Backend) Perturb(dst, src tensor.Buf, p *tensor.Perturbation) {
	defer b.enter()()
	n := dst.Len()
	need(src.Len() >= n, "Perturb: %d floats from %d", n, src.Len())
	checkNoise(&p.Noise)
	if n == 0 {
		return
	}
	args := append([]any{devPtr(dbuf(dst).ptr), devPtr(0), devPtr(dbuf(src).ptr), boolArg(false), i64Arg(n)}, noiseArgs(&p.Noise, p.Offset)...)
	b.launch("perturb_copy", blocks1D(quads(p.Offset, n)), 256, 0, append(args, f64Arg(p.Scale), f64Arg(0))...)
}
