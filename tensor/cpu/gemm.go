package cpu

// This file is the CPU backend's GEMM API (what its tensor.Backend methods
// and the perturbed GEMM call), and the blocked, multi-threaded driver
// behind it. The inner 4×32 tile kernels live in
// gemm_kern_*.go (AVX-512, AVX2, portable Go); the path is chosen at start-up
// from the CPU features (see gemm_path.go). A path may also have taller tiles
// (8×32, 12×32, 6×32) for the rows that come in whole groups; their height is
// chosen by a short calibration (gemm_tile.go) and never changes results.
//
// Layout. A right-hand side matrix is stored as panels of nr=32 output
// columns: panel p holds, for each k, the 32 values W[p*32+j][k] contiguously
// (zero padded past N). The kernel streams one panel while broadcasting four
// rows of the left-hand side straight from their row-major storage, so the
// left side is never repacked.
//
// Determinism. Every output element is computed by the same kernel in the
// same order whatever the number of workers: K is cut into fixed kcBlock
// slices, each slice is summed in a register from zero in k order, and the
// slices are added to C in k order. Workers only decide which tiles they
// compute, never how. A row's result also does not depend on how many other
// rows are in the call.

import (
	"fmt"
	"sync"
	"sync/atomic"
)

const (
	mr = 4  // rows of a micro tile
	nr = 32 // columns of a micro tile = width of a packed panel

	// kcBlock is the K slice a tile is accumulated over before it is added
	// to C: a panel slice is kcBlock*nr*4 = 64 KiB (L2), a row slice 2 KiB.
	// It fixes the summation order, so it must stay a constant.
	kcBlock = 512
	// mcBlock is the number of rows swept past a panel's super-block.
	mcBlock = 256
	// defaultKSuper is the depth of the K super-blocks: a task computes each
	// of its tiles over a whole super-block (kSuper/kcBlock slices) before
	// the next tile, so a tile's C values stay in L1 between slices and the
	// output is written to memory once per super-block (once for every K of
	// the target models but Llama's down_proj, 8192). A panel's super-block
	// is at most 512 KiB and stays in L2 while the rows stream past it. Every
	// order adds the same slices to a tile in the same k order, so results do
	// not depend on it. Measured against sweeping one slice of every tile at
	// a time (docs/PERFORMANCE.md): 3-15 % faster on the shapes with K up to
	// 3072 (the LM heads most), about the same at 8192.
	defaultKSuper = 4096
	// taskPanels is the number of panels in one unit of work handed to a
	// worker. Work is handed out dynamically (an atomic counter), so a core
	// taken by another process slows the call instead of stalling it.
	taskPanels = 8
	// smallM is the most rows for which a call is treated as bound by
	// streaming the panels (decoding; the LoRA products of a few rows):
	// tasks are cut across panels rather than rows.
	smallM = 16
	// serialFlops: calls below this many flops run on the calling goroutine.
	serialFlops = 1 << 21
)

// kSuper is defaultKSuper, a variable only so that tests can check that
// the blocking does not change results.
var kSuper = defaultKSuper

// Packed is a frozen nn.Linear weight W [N][K] (HF layout: out × in) stored in
// the layout the GEMM kernel streams, so that y = x·Wᵀ needs no repacking per call.
//
// A Packed made by PackBF16 stores the panels as bfloat16 (half the memory
// and bandwidth) and widens them to float32 in the kernel.
type Packed struct {
	N, K   int
	data   []float32 // ceil(N/32) panels of K×32 floats, see the file comment
	data16 []uint16  // the same panels as bfloat16 bits (PackBF16), data is nil
}

// Pack copies w (row-major [n][k]) into a Packed matrix.
func Pack(wk Workers, w []float32, n, k int) *Packed {
	if n < 0 || k < 0 || len(w) != n*k {
		panic(fmt.Sprintf("cpu.Pack: len(w)=%d, want n*k=%d*%d", len(w), n, k))
	}
	d := make([]float32, panels(n)*k*nr)
	wk.For(panels(n), func(lo, hi int) { packPanelsNT(d, w, n, k, lo, hi) })
	return &Packed{N: n, K: k, data: d}
}

// Row copies row n of W (length K) into dst: Backend.Rows reads rows of a
// packed matrix with it (a tied embedding's rows, for one).
func (p *Packed) Row(dst []float32, n int) {
	if n < 0 || n >= p.N {
		panic(fmt.Sprintf("cpu.Packed.Row: row %d out of range [0,%d)", n, p.N))
	}
	off := (n/nr)*p.K*nr + n%nr
	dst = dst[:p.K]
	if p.data16 != nil {
		src := p.data16[off:]
		for k := range dst {
			dst[k] = bf16ToF32(src[k*nr])
		}
		return
	}
	src := p.data[off:]
	for k := range dst {
		dst[k] = src[k*nr]
	}
}

// Shape returns the matrix's dimensions (N out × K in); Packed is the CPU
// backend's Weight.
func (p *Packed) Shape() (n, k int) { return p.N, p.K }

// IsBF16 reports whether the panels are stored as bfloat16 (PackBF16).
func (p *Packed) IsBF16() bool { return p.data16 != nil }

// MatMulPacked computes y[m][N] = x[m][K] · Wᵀ, overwriting y.
func MatMulPacked(wk Workers, y, x []float32, m int, w *Packed) {
	checkLen("MatMulPacked", y, m*w.N, x, m*w.K)
	gemm(wk, y, x, w.data, w.data16, m, w.N, w.K)
}

// MatMulNT computes c[m][n] = a[m][k] · b[n][k]ᵀ for unpacked b, overwriting c.
// Used where the right-hand side changes every call (attention scores, LoRA);
// b is packed into a pooled scratch buffer first.
func MatMulNT(wk Workers, c, a, b []float32, m, n, k int) {
	checkLen("MatMulNT", c, m*n, a, m*k)
	if len(b) < n*k {
		panic(fmt.Sprintf("cpu.MatMulNT: len(b)=%d < n*k=%d", len(b), n*k))
	}
	buf := getScratch(panels(n) * k * nr)
	packNT(*buf, b, n, k)
	gemm(wk, c, a, *buf, nil, m, n, k)
	scratch.Put(buf)
}

// MatMulNTAdd computes c[m][n] += s · (a[m][k] · b[n][k]ᵀ): LoRA's second
// product, whose sum is formed whole (MatMulNT's bits), then scaled and
// added (AddScaled's). It goes a block of rows at a time, each block's
// product into scratch that stays in the core's cache while it is added:
// the product of all rows at once would be written to memory and read back,
// which for a short k (the rank) is most of the time. A row's bits do not
// depend on its block.
func MatMulNTAdd(wk Workers, c, a, b []float32, m, n, k int, s float32) {
	checkLen("MatMulNTAdd", c, m*n, a, m*k)
	if len(b) < n*k {
		panic(fmt.Sprintf("cpu.MatMulNTAdd: len(b)=%d < n*k=%d", len(b), n*k))
	}
	if m == 0 || n == 0 { // nothing to add (and no block size for n = 0)
		return
	}
	buf := getScratch(panels(n) * k * nr)
	packNT(*buf, b, n, k)
	block := max(mr, addBlockBytes/(4*n)/mr*mr) // rows whose product fits the budget
	wk.For((m+block-1)/block, func(lo, hi int) {
		tmp := getScratch(block * n)
		for i := lo * block; i < min(m, hi*block); i += block {
			rows := min(block, m-i)
			gemm(1, *tmp, a[i*k:(i+rows)*k], *buf, nil, rows, n, k)
			scaledAdd(c[i*n:(i+rows)*n], (*tmp)[:rows*n], s)
		}
		scratch.Put(tmp)
	})
	scratch.Put(buf)
}

// addBlockBytes is the most bytes of product MatMulNTAdd holds at once per
// worker: with the output rows it is added to, well within a core's L2.
const addBlockBytes = 256 << 10

// MatMulNN computes c[m][n] = a[m][k] · b[k][n], overwriting c.
func MatMulNN(wk Workers, c, a, b []float32, m, n, k int) {
	checkLen("MatMulNN", c, m*n, a, m*k)
	if len(b) < n*k {
		panic(fmt.Sprintf("cpu.MatMulNN: len(b)=%d < n*k=%d", len(b), n*k))
	}
	buf := getScratch(panels(n) * k * nr)
	packNN(*buf, b, n, k)
	gemm(wk, c, a, *buf, nil, m, n, k)
	scratch.Put(buf)
}

func checkLen(op string, c []float32, nc int, a []float32, na int) {
	if len(c) < nc || len(a) < na {
		panic(fmt.Sprintf("cpu.%s: len(out)=%d want >= %d, len(in)=%d want >= %d", op, len(c), nc, len(a), na))
	}
}

func panels(n int) int { return (n + nr - 1) / nr }

// packNT packs b [n][k] (row-major, one output column per row) into panels.
// Padding columns of the last panel are zeroed.
func packNT(d, b []float32, n, k int) { packPanelsNT(d, b, n, k, 0, panels(n)) }

// packPanelsNT packs panels [p0, p1) of b, as packNT.
func packPanelsNT(d, b []float32, n, k, p0, p1 int) {
	for p := p0; p < p1; p++ {
		panel := d[p*k*nr : (p+1)*k*nr]
		cols := min(nr, n-p*nr)
		if cols < nr {
			clear(panel)
		}
		// Go 8 columns at a time over k so that reads stay sequential in
		// 8 rows and writes fill whole cache lines.
		for j0 := 0; j0 < cols; j0 += 8 {
			j1 := min(cols, j0+8)
			for j := j0; j < j1; j++ {
				row := b[(p*nr+j)*k : (p*nr+j+1)*k]
				for kk, v := range row {
					panel[kk*nr+j] = v
				}
			}
		}
	}
}

// packNN packs b [k][n] (row-major) into panels.
func packNN(d, b []float32, n, k int) {
	for p := range panels(n) {
		panel := d[p*k*nr : (p+1)*k*nr]
		cols := min(nr, n-p*nr)
		for kk := range k {
			dst := panel[kk*nr : (kk+1)*nr]
			copy(dst, b[kk*n+p*nr:kk*n+p*nr+cols])
			clear(dst[cols:])
		}
	}
}

// scratch holds the packing buffers of MatMulNT/MatMulNN.
var scratch sync.Pool

func getScratch(n int) *[]float32 {
	if v, ok := scratch.Get().(*[]float32); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]float32, n)
	return &s
}

// gemmJob is one call's work: c[m][n] = a[m][k] · (packed b), split into
// tasks of j.taskPanels panels × mTask rows.
type gemmJob struct {
	c, a, b []float32
	b16     []uint16 // bf16 panels instead of b
	m, n, k int
	kern    microKernel
	kern16  microKernelBF16
	tall    []tallKernel          // taller float32 kernels in use, tallest first
	exact   *[2][mcBlock + 1]bool // row counts that split exactly into the heights in use (tileState.exact)

	taskPanels int // panels per task
	mTask      int // rows per task
	nTaskN     int // tasks across the panels
	nTask      int
	next       atomic.Int64
	wg         sync.WaitGroup
	tmp        [mr * nr]float32 // edge tile scratch of the calling goroutine
}

var jobs = sync.Pool{New: func() any { return new(gemmJob) }}

// gemm computes c = a · (packed b or b16) with the current path.
func gemm(wk Workers, c, a, b []float32, b16 []uint16, m, n, k int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	j := jobs.Get().(*gemmJob)
	j.c, j.a, j.b, j.b16, j.m, j.n, j.k = c, a, b, b16, m, n, k
	path := currentPath()
	tiles := path.tilesInUse()
	j.kern, j.kern16, j.tall, j.exact = path.kern, path.kern16, tiles.tall, tiles.exact

	th := wk.n()
	if 2*m*n*k < serialFlops {
		th = 1
	}
	// Split rows too only when the panels alone give too few tasks
	// (small N, e.g. LoRA's r=16, or the 512-wide k/v projections). With
	// few rows (decoding, M = 8) the call is bound by streaming the panels
	// once: cut the panels finer first, so that no panel is read by two
	// row tiles.
	j.taskPanels = taskPanels
	j.nTaskN = (panels(n) + taskPanels - 1) / taskPanels
	if th > 1 && j.nTaskN < 4*th && m <= smallM {
		j.taskPanels = max(1, panels(n)/(4*th))
		j.nTaskN = (panels(n) + j.taskPanels - 1) / j.taskPanels
	}
	j.mTask = m
	if th > 1 && j.nTaskN < 4*th {
		want := (4*th + j.nTaskN - 1) / j.nTaskN
		j.mTask = max(mr, (m/want+mr-1)/mr*mr)
	}
	j.nTask = j.nTaskN * ((m + j.mTask - 1) / j.mTask)
	th = min(th, j.nTask)
	j.next.Store(0)

	if th > 1 {
		startWorkers(th - 1)
		j.wg.Add(th - 1)
		for range th - 1 {
			work <- j
		}
	}
	j.work(&j.tmp)
	j.wg.Wait()

	j.c, j.a, j.b, j.b16, j.kern, j.kern16, j.tall, j.exact = nil, nil, nil, nil, nil, nil, nil, nil
	jobs.Put(j)
}

// work runs tasks until none is left.
func (j *gemmJob) work(tmp *[mr * nr]float32) {
	for {
		t := int(j.next.Add(1) - 1)
		if t >= j.nTask {
			return
		}
		j.task(t, tmp)
	}
}

// task computes the tiles of panels [p0,p1) × rows [i0,i1), one K
// super-block at a time.
func (j *gemmJob) task(t int, tmp *[mr * nr]float32) {
	p0 := (t % j.nTaskN) * j.taskPanels
	p1 := min(panels(j.n), p0+j.taskPanels)
	i0 := (t / j.nTaskN) * j.mTask
	i1 := min(j.m, i0+j.mTask)
	for kLo := 0; kLo < j.k; kLo += kSuper {
		j.tiles(p0, p1, i0, i1, kLo, min(j.k, kLo+kSuper), tmp)
	}
}

// tiles adds the slices [kLo, kHi) of K to the tiles of panels [p0,p1) ×
// rows [i0,i1), each tile over the whole range before the next.
func (j *gemmJob) tiles(p0, p1, i0, i1, kLo, kHi int, tmp *[mr * nr]float32) {
	for r0 := i0; r0 < i1; r0 += mcBlock {
		r1 := min(i1, r0+mcBlock)
		for p := p0; p < p1; p++ {
			j.panelTiles(panelData{j.b, j.b16, p * j.k * nr}, p, r0, r1, kLo, kHi, tmp)
		}
	}
}

// panelData is where a panel's values are read: element (kk, col) of the
// panel at base + kk·nr + col of b, or of b16 when it is not nil.
type panelData struct {
	b    []float32
	b16  []uint16
	base int
}

// panelTiles adds the slices [kLo, kHi) of K to the tiles of panel p (its
// values in pd) × rows [r0, r1), at most mcBlock rows, each tile over the
// whole range before the next, kcBlock deep at a time: a range that starts
// at a multiple of kcBlock is summed as MatMul sums it (a block never runs
// past kHi; the perturbed GEMM's once did, past slices of other depths).
func (j *gemmJob) panelTiles(pd panelData, p, r0, r1, kLo, kHi int, tmp *[mr * nr]float32) {
	n, k := j.n, j.k
	cols := min(nr, n-p*nr)
	for i := r0; i < r1; {
		cp := j.c[i*n+p*nr:]
		if t := j.tallTile(r1-i, cols, pd.b16 != nil); t != nil {
			for k0 := kLo; k0 < kHi; k0 += kcBlock {
				kc := min(kcBlock, kHi-k0)
				if boff := pd.base + k0*nr; pd.b16 != nil {
					t.kern16(&j.a[i*k+k0], k, &pd.b16[boff], &cp[0], n, kc, k0 > 0)
				} else {
					t.kern(&j.a[i*k+k0], k, &pd.b[boff], &cp[0], n, kc, k0 > 0)
				}
			}
			i += t.rows
			continue
		}
		rows := min(mr, r1-i)
		// An edge tile runs the same kernel on a scratch tile.
		full := rows == mr && cols == nr
		if !full && kLo > 0 {
			for r := range rows {
				copy(tmp[r*nr:r*nr+cols], cp[r*n:r*n+cols])
			}
		}
		for k0 := kLo; k0 < kHi; k0 += kcBlock {
			kc := min(kcBlock, kHi-k0)
			boff := pd.base + k0*nr
			if full {
				j.tile(pd, &j.a[i*k+k0], mr, boff, &cp[0], n, kc, k0 > 0)
			} else {
				j.tile(pd, &j.a[i*k+k0], rows, boff, &tmp[0], nr, kc, k0 > 0)
			}
		}
		if !full {
			for r := range rows {
				copy(cp[r*n:r*n+cols], tmp[r*nr:r*nr+cols])
			}
		}
		i += mr
	}
}

// tallTile returns the tallest of the job's tall kernels that fits in the
// rows left, for a tile of whole columns (and that has a bfloat16 variant
// when the panels are bfloat16); nil: use the 4-row kernel. Where the rows
// left split exactly into the heights in use, it keeps them so: 8 rows on
// AVX2 (6-row tall kernel) are two 4-row tiles, not a 6-row tile and a
// 4-row tile with 2 rows of work thrown away. Every height gives the same
// bits, so this changes speed only.
func (j *gemmJob) tallTile(rowsLeft, cols int, bf16 bool) *tallKernel {
	if cols != nr {
		return nil
	}
	exact := &j.exact[0]
	if bf16 {
		exact = &j.exact[1]
	}
	for i := range j.tall {
		t := &j.tall[i]
		if t.rows > rowsLeft || (bf16 && t.kern16 == nil) {
			continue
		}
		if !exact[rowsLeft] || exact[rowsLeft-t.rows] {
			return t
		}
	}
	return nil
}

// tile runs the micro kernel on the panel data at offset boff.
func (j *gemmJob) tile(pd panelData, a *float32, rows, boff int, c *float32, ldc, kc int, acc bool) {
	if pd.b16 != nil {
		j.kern16(a, j.k, rows, &pd.b16[boff], c, ldc, kc, acc)
		return
	}
	j.kern(a, j.k, rows, &pd.b[boff], c, ldc, kc, acc)
}

// The worker pool: goroutines started on first need that take jobs from
// work and run tasks from them alongside the calling goroutine.
var (
	workMu  sync.Mutex
	workers int
	work    = make(chan *gemmJob, 64)
)

func startWorkers(n int) {
	workMu.Lock()
	defer workMu.Unlock()
	for ; workers < n; workers++ {
		go func() {
			var tmp [mr * nr]float32
			for j := range work {
				j.work(&tmp)
				j.wg.Done()
			}
		}()
	}
}
