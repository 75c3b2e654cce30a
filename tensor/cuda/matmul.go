// The matrix products: cuBLAS SGEMM in full float32, through the transpose
// identity that lets column-major cuBLAS multiply row-major data; with
// Options.BF16Products, a bfloat16 weight's on the tensor cores; with
// Options.TF32x3, float32 products on Hopper's tensor cores where their
// shape allows (gemm_3xtf32).

package cuda

import (
	"cmp"

	"github.com/meazo-go/meazo/tensor"
)

// gemm computes y [rows][n] = x [rows][k] · Wᵀ for a row-major W [n][k] at
// w, or with add y += s · x · Wᵀ. cuBLAS is column-major: the row-major y
// is the column-major yᵀ [n × rows] = W · xᵀ, where W read column-major
// with leading dimension k is Wᵀ, hence op(A) = Aᵀ on W and op(B) = B on
// x. Adding is cuBLAS's α = s, β = 1: the product is added as it is
// written, with no buffer or pass of its own.
func (b *Backend) gemm(y, x, w uint64, rows, n, k int, add bool, s float32) {
	if rows == 0 || n == 0 || (add && k == 0) {
		return
	}
	if k == 0 { // an empty sum; cuBLAS would refuse lda = 0
		if err := b.dev.memsetD32(y, 0, uint64(rows*n)); err != nil {
			b.fail(err)
		}
		return
	}
	b.gemmCols(y, x, w, rows, n, n, k, add, s)
}

// gemmCols is gemm for n of the columns of y, whose rows are ldy apart:
// y [rows][ldy] at columns [0, n) = x [rows][k] · Wᵀ, W [n][k] at w (k > 0).
// Full-parameter ZO multiplies by a matrix a block of its rows at a time,
// each block giving a block of y's columns (trainer.go).
func (b *Backend) gemmCols(y, x, w uint64, rows, n, ldy, k int, add bool, s float32) {
	if b.tf32x3 && k >= cmp.Or(b.tf32x3MinK, gemm3xTF32MinK) && fits3xTF32(y, x, w, rows, n, ldy, k) {
		slices := split3xTF32(rows, n, k, b.sms)
		if b.tf32x3Split > 0 {
			slices = min(b.tf32x3Split, k/32)
		}
		if slices > 0 {
			b.gemm3xTF32(y, x, w, rows, n, ldy, k, add, s, slices)
			return
		}
	}
	alpha, beta := float32(1), float32(0)
	if add {
		alpha, beta = s, 1
	}
	if err := b.dev.sgemm(opT, opN, n, rows, k, w, k, x, k, y, ldy, alpha, beta); err != nil {
		b.fail(err)
	}
}

// gemm3xTF32 is gemmCols by gemm_3xtf32 (fits3xTF32), its k in slices
// (1 ≤ slices ≤ k/32): one slice, gemm_3xtf32 into y; more,
// gemm_3xtf32_split's sums of each slice into a scratch matrix
// [slices][rows][n] from the pool, then gemm_3xtf32_reduce adds them in
// order into y.
func (b *Backend) gemm3xTF32(y, x, w uint64, rows, n, ldy, k int, add bool, s float32, slices int) {
	added := 0
	if add {
		added = 1
	}
	grid := [3]uint32{uint32((n + 127) / 128), uint32((rows + 127) / 128), 1}
	if slices == 1 {
		b.launch("gemm_3xtf32", grid, 256, gemm3xTF32Shm,
			devPtr(y), devPtr(x), devPtr(w), i32Arg(rows), i32Arg(n), i32Arg(k), i32Arg(ldy), i32Arg(added), f32Arg(s),
			i32Arg(gemm3xTF32Col), i32Arg(128))
		return
	}
	part := b.malloc(slotBytes(slices * rows * n))
	defer b.recycle(part) // the launches below are on the stream before any later use of it
	grid[2] = uint32(slices)
	b.launch("gemm_3xtf32_split", grid, 256, gemm3xTF32Shm,
		devPtr(part), devPtr(x), devPtr(w), i32Arg(rows), i32Arg(n), i32Arg(k), i32Arg(slices),
		i32Arg(gemm3xTF32Col), i32Arg(128))
	b.launch("gemm_3xtf32_reduce", blocks1D(rows*n/2), 256, 0,
		devPtr(y), devPtr(part), i32Arg(rows), i32Arg(n), i32Arg(ldy), i32Arg(slices), i32Arg(added), f32Arg(s))
}

// split3xTF32 is how many slices of k gemm_3xtf32 takes a product of
// rows × n × k in on a GPU of sms multiprocessors (k ≥ the backend's
// minimum, fits3xTF32), 0 for none (SGEMM): one where its grid fills the
// GPU (fills3xTF32; and where sms ≤ 0: the emulator,
// MEAZO_CUDA_3XTF32=all), else the fewest up to gemm3xTF32MaxSplit whose
// grid of blocks × slices fills it by the same rule (fillsGrid) while each
// slice keeps at least gemm3xTF32MinSliceTiles tiles of 32 of k. The
// slices are summed apart and then added in a fixed order, so the bits
// depend on the number of slices: a GPU of sms multiprocessors always
// splits a shape the same way, and its bits are its own (another GPU may
// split otherwise). At 1,280 rows on an H100 or H200 (132) Llama-3.2-1B's
// q, o and down products (160 blocks, 61 % in two waves) take 2 slices
// (320 blocks, 81 % in three), its k and v 3 (40 blocks; 120, 91 %);
// Qwen3-0.6B's q 2 and its o and down 3 (80 blocks; 240, 91 %), but its
// k and v (80 blocks, k = 1,024: 32 tiles) none: those, and its q at 640
// rows (80 blocks, 160 in 2 slices: 61 % either way), take the kernel
// unsplit (gemm3xTF32MinFillUnsplit), where Llama's k and v at 640 rows (20
// blocks, 15 %) stay on SGEMM. On an H200 every product this rule gives
// the kernel ran 1.20-1.89× faster than SGEMM at 0.23-0.97× its rms error
// (run5-ff46f2f/tcgemm.txt, the models' 46 shapes), where its first form,
// without the unsplit fallback, left two shapes on SGEMM that the kernel ran
// 1.20× and 1.25× faster. dev/cuda/gemm_wgmma.cu mirrors it.
func split3xTF32(rows, n, k, sms int) int {
	if fills3xTF32(rows, n, sms) { // sms ≤ 0 included
		return 1
	}
	blocks := grid3xTF32(rows, n)
	for slices := 2; slices <= gemm3xTF32MaxSplit && k/32/slices >= gemm3xTF32MinSliceTiles; slices++ {
		if fillsGrid(blocks*slices, sms, gemm3xTF32MinFill) {
			return slices
		}
	}
	if fillsGrid(blocks, sms, gemm3xTF32MinFillUnsplit) {
		return 1
	}
	return 0
}

// The bounds of split3xTF32: at most 4 slices, each of at least 16 tiles
// (512 values of k).
const (
	gemm3xTF32MaxSplit      = 4
	gemm3xTF32MinSliceTiles = 16
)

// gemm_3xtf32's layout (kernels_sm90a/gemm_3xtf32.cu): a k-quad column of a
// 128-row tile is 128 rows of 16 bytes and 16 of padding (the shared-memory
// descriptors' leading-dimension offset); a block holds two stages of four
// tiles (x and W, each split in two) of 8 such columns.
const (
	gemm3xTF32Col = 128*16 + 16
	gemm3xTF32Shm = 2 * 4 * 8 * gemm3xTF32Col
)

// gemm3xTF32MinK is the shortest product gemm_3xtf32 takes (Backend.tf32x3MinK;
// the tests set fewer). Its error has a floor, the split's (about 2.5e-7 of
// the outputs' rms), where SGEMM's grows with k. Package tensorcore's model
// of the tensor cores put the crossing below k = 256 (1.73× SGEMM's rms at
// k = 64, 0.90× at 256, 0.62× at 512: dev/cuda/tcsim.go), but on an H200
// cuBLAS SGEMM was more accurate than the model of it: 3xTF32 had 1.65× its
// rms error at 165×192×256, 0.79× at 300×2048×1024, 0.60× at k = 2048 and
// 0.85× at k = 3072 (docs/bench/2026-11-30-h200/run1-febb616/tcgemm-backend.txt).
// So 1024, the shortest measured where it is the more accurate; the models'
// projections have k ≥ 1024 except ViT-B/16's (768) and Qwen2.5-0.5B's
// from its hidden states (896; configs/ runs it), which stay on SGEMM.
const gemm3xTF32MinK = 1024

// fits3xTF32 reports whether gemm_3xtf32 computes y = x·Wᵀ (or adds it)
// for these operands: it takes k 32 at a time, stores y's columns in pairs
// (so n and the rows' distance ldy are even, y 8-byte aligned) and reads x
// and W 16 bytes at a time; its grid has at most 65,535 blocks of 128 rows.
// Residuals' projections (o_proj and down_proj add into the hidden states)
// and full-parameter ZO's blocks of columns take it too.
func fits3xTF32(y, x, w uint64, rows, n, ldy, k int) bool {
	return k%32 == 0 && n%2 == 0 && ldy%2 == 0 && ldy >= n && x%16 == 0 && w%16 == 0 && y%8 == 0 && rows <= 65535*128
}

// fills3xTF32 reports whether gemm_3xtf32's grid for a product of rows × n
// keeps at least gemm3xTF32MinFill of the GPU's sms multiprocessors busy
// over its waves (sms ≤ 0: every shape). Its blocks of 128 × 128 outputs
// run one to a multiprocessor, so a grid of 160 blocks on 132 takes two
// waves, the second 28 blocks on an otherwise idle GPU: 61 % of two waves'
// capacity used, where SGEMM picks smaller tiles or splits k. On an H200
// (docs/bench/2026-11-30-h200/run1-febb616/tcbench.txt) its first version,
// which waited for the tensor cores before loading the next tile, made
// Llama-3.2-1B's forward at 1,024 rows faster than SGEMM (0.053 against
// 0.061 s: its q, o and down products 128 blocks, 97 %) but the ZO step at
// 8×80 (1,280 rows: those products 160 blocks, 61 %) slower (0.072 against
// 0.066 s). The threshold came from those figures; at ff46f2f, on the
// models' 46 shapes, every grid of ≥ 77 % ran 1.24-1.89× SGEMM's speed
// (docs/bench/2026-11-30-h200/run5-ff46f2f/tcgemm.txt).
func fills3xTF32(rows, n, sms int) bool {
	if sms <= 0 {
		return true
	}
	return fillsGrid(grid3xTF32(rows, n), sms, gemm3xTF32MinFill)
}

// grid3xTF32 is the number of 128 × 128 blocks of gemm_3xtf32's grid for a
// product of rows × n.
func grid3xTF32(rows, n int) int { return ((n + 127) / 128) * ((rows + 127) / 128) }

// fillsGrid reports whether a grid of blocks, one a multiprocessor, keeps
// at least the fraction fill of sms multiprocessors busy over its waves.
func fillsGrid(blocks, sms int, fill float64) bool {
	waves := (blocks + sms - 1) / sms
	return float64(blocks) >= fill*float64(waves*sms)
}

// The thresholds of split3xTF32: a grid that keeps gemm3xTF32MinFill of the
// GPU busy takes the kernel as it is (or with k split into slices, so that
// it does); where no split does, a grid of at least gemm3xTF32MinFillUnsplit
// still takes it unsplit. On an H200 at ff46f2f (run5-ff46f2f/tcgemm.txt,
// gemm_3xtf32's column wgmma/1) grids of 61 % ran 1.10-1.25× SGEMM's speed
// unsplit (Qwen3-0.6B's q at 640 rows and k/v at 1,280, one wave;
// Llama-3.2-1B's q/o and Qwen3's q at 1,280, two; the other 61 % grids,
// which the rule splits, 0.99-1.14×), grids of 30 % 0.66-0.80× (Qwen3's k/v
// and o at 640 rows) and of 15 % 0.42× (Llama's k/v at 640): 0.6 lies
// between what was measured to win and to lose, not at a measured crossing.
const (
	gemm3xTF32MinFill        = 0.75
	gemm3xTF32MinFillUnsplit = 0.6
)

// defaultWideChunk is the most elements of a bfloat16 weight widened to
// float32 at once for SGEMM (Backend.wideChunk; the tests set fewer):
// 256 MiB, a block of rows whose product keeps a GPU as busy as the whole
// matrix's. A whole LM head widened at once was 2.5 GB of scratch for
// Qwen3-8B (151,936 × 4,096), held for the backend's life: its plain
// forward's peak was 2.4 GB above its full-parameter step's
// (docs/bench/2026-11-28-h200-full/).
const defaultWideChunk = 1 << 26

// product computes y = x·Wᵀ, or with add y += x·Wᵀ: SGEMM by W (widened
// first if it is bfloat16), or with Options.BF16Products a bfloat16 W's
// product on the tensor cores.
func (b *Backend) product(y, x uint64, w *weight, rows int, add bool) {
	switch {
	case !w.bf16 || rows == 0 || w.n == 0 || w.k == 0:
		b.gemm(y, x, w.ptr, rows, w.n, w.k, add, 1) // (nothing of W is read when a size is 0)
	case b.bf16Products:
		b.productBF16(y, x, w, rows, add)
	default:
		b.productWidened(y, x, w, rows, add)
	}
}

// productWidened is product for a bfloat16 W by SGEMM: W's rows widened to
// float32 a block at a time into a scratch matrix from the pool, each
// block's product the block of y's columns it gives: MatMulPerturbed's
// multiplyBlock with W read as it is, in blocks of wideChunk elements. On
// the emulator the blocks give the whole matrix's bits; on a GPU cuBLAS may
// choose another kernel for a block than for the whole (rows, n, k > 0).
func (b *Backend) productWidened(y, x uint64, w *weight, rows int, add bool) {
	chunk := blockRows(w, b.wideChunk, defaultWideChunk)
	scratch := b.malloc(slotBytes(chunk * w.k))
	defer b.recycle(scratch)
	plain := perturbJob{ranges: [][]rowRange{{{0, rows}}}}
	for r0 := 0; r0 < w.n; r0 += chunk {
		b.multiplyBlock(&plain, w, r0, min(chunk, w.n-r0), scratch, 0, y, x, add)
	}
}

// productBF16 is product for a bfloat16 W on the tensor cores: x rounded
// to bfloat16 (half to even) into a scratch matrix from the pool, then
// cublasGemmEx by W as stored, summed in float32 (rows, n, k > 0). On the
// emulator its bits are SGEMM's by W widened and x rounded: the products
// of bfloat16 numbers are exact in float32, and it sums them in order.
func (b *Backend) productBF16(y, x uint64, w *weight, rows int, add bool) {
	n := rows * w.k
	narrow := b.malloc(uint64(2 * n))
	defer b.recycle(narrow)
	b.launch("f32_to_bf16", blocks1D(n), 256, 0, devPtr(narrow), devPtr(x), i64Arg(n))
	beta := float32(0)
	if add {
		beta = 1
	}
	if err := b.dev.gemmBF16(opT, opN, w.n, rows, w.k, w.ptr, w.k, narrow, w.k, y, w.n, 1, beta); err != nil {
		b.fail(err)
	}
}

func (b *Backend) MatMul(y, x tensor.Buf, rows int, wt tensor.Weight) {
	defer b.enter()()
	w := dweight(wt)
	need(x.Len() >= rows*w.k && y.Len() >= rows*w.n, "MatMul: %d rows of %d×%d with x of %d and y of %d floats", rows, w.n, w.k, x.Len(), y.Len())
	b.product(dbuf(y).ptr, dbuf(x).ptr, w, rows, false)
}

func (b *Backend) MatMulNT(y, x, m tensor.Buf, rows, n, k int) {
	defer b.enter()()
	need(x.Len() >= rows*k && y.Len() >= rows*n && m.Len() >= n*k, "MatMulNT: %d rows, %d×%d, with x, y, m of %d, %d, %d floats", rows, n, k, x.Len(), y.Len(), m.Len())
	b.gemm(dbuf(y).ptr, dbuf(x).ptr, dbuf(m).ptr, rows, n, k, false, 1)
}

func (b *Backend) MatMulAdd(y, x tensor.Buf, rows int, wt tensor.Weight) {
	defer b.enter()()
	w := dweight(wt)
	need(x.Len() >= rows*w.k && y.Len() >= rows*w.n, "MatMulAdd: %d rows of %d×%d with x of %d and y of %d floats", rows, w.n, w.k, x.Len(), y.Len())
	b.product(dbuf(y).ptr, dbuf(x).ptr, w, rows, true)
}

func (b *Backend) MatMulNTAdd(y, x, m tensor.Buf, rows, n, k int, s float32) {
	defer b.enter()()
	need(x.Len() >= rows*k && y.Len() >= rows*n && m.Len() >= n*k, "MatMulNTAdd: %d rows, %d×%d, with x, y, m of %d, %d, %d floats", rows, n, k, x.Len(), y.Len(), m.Len())
	b.gemm(dbuf(y).ptr, dbuf(x).ptr, dbuf(m).ptr, rows, n, k, true, s)
}
