// Package cuda is the NVIDIA GPU implementation of tensor.Backend, in pure
// Go: the CUDA driver API (libcuda.so.1, from the NVIDIA driver) and cuBLAS
// (libcublas.so.13, .12 or .11) are loaded at run time with purego, so the
// binaries need no cgo and run unchanged on machines without a GPU, where
// Open says what is missing.
//
// Weights live in device memory from Pack on (float32, or bfloat16 widened
// exactly before each product); the matrix products are cuBLAS SGEMMs in
// full float32 (TF32 off); everything else runs this package's kernels
// (kernels.cu, compiled to PTX by NVRTC at go generate time and embedded).
// All work goes to the default stream, in order, so results are
// bit-identical run to run; see kernels.cu for how they relate to the CPU
// backend's.
package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

func init() {
	tensor.Register("cuda", 10, func(o tensor.Options) (tensor.Backend, error) { return Open(o.Device) })
}

// Backend computes on one GPU. Its methods may be called from any
// goroutine, one at a time (a mutex serialises them): each binds the
// device's primary context to the calling OS thread.
type Backend struct {
	mu          sync.Mutex
	dev         device
	desc        string
	arith       string              // Arithmetic: the GPU and cuBLAS (Open), then the settings that change the bits
	maxShm      int                 // dynamic shared memory a block may use (attention)
	free        map[uint64][]cached // freed allocations by size class, for reuse, oldest first
	freed       uint64              // recycle calls so far: the age of a cached block
	live        map[uint64]uint64   // allocation → bytes, for Free and the leak check
	liveBytes   uint64              // bytes live in buffers and caches (weights not counted)
	peakBytes   uint64              // the most liveBytes has been: the largest working set
	cachedBytes uint64              // bytes in free, held for reuse
	heldBytes   uint64              // bytes allocated from the device and not yet returned
	peakHeld    uint64              // the most heldBytes has been (DeviceMemory)
	weights     int
	caches      int
	cacheAllocs int      // allocations held by KV caches (two per layer), counted in live too
	ids, ids2   devArray // staging for row indices and targets
	mask        devArray // the attention mask of the current step
	maskNow     []int32  // what mask holds
	wide        devArray // bfloat16 weights widened for one product
	out         devArray // small results (cross-entropy, argmax)
	closed      bool
	poisoned    error // a sticky device error: every later call fails with it
	// tiledMinHD: attention_tiled computes attention for calls with more
	// than one new token and a head width in [tiledMinHD, 128]; 0 turns it
	// off. Both kernels give the same bits; which is faster was measured on
	// an H200 (docs/PERFORMANCE.md): attention_tiled for Qwen3-0.6B's heads
	// of 128 (2-7 % off a forward or a ZO step), attention for
	// Llama-3.2-1B's of 64 (equal at 8×128 and 8×300, 3-5 % faster at 8×512), hence
	// the default 128. $MEAZO_CUDA_ATTENTION overrides it.
	tiledMinHD int
	// gemmMinKeys: attentionGEMM computes attention for calls of more than
	// one new token that see at least gemmMinKeys slots (Start+Tokens) and
	// whose scores fit attnGEMMMaxBytes; 0 turns it off. Measured on an
	// H200 (docs/PERFORMANCE.md): a tie with the other kernels at 128 slots,
	// faster from 300 (Qwen3-0.6B's forward 6 % at 8×300, 16 % at 8×512;
	// Llama-3.2-1B's 2 % and 5 %), hence the default 256 between them.
	gemmMinKeys int
	// attnChunk: attentionGEMM takes the new tokens in chunks of attnChunk
	// queries (more where that would make over attnMaxChunks), each chunk's
	// scores only against the slots its last query sees, so that the causal
	// mask's upper triangle is mostly not computed; 0 takes them all at once.
	// $MEAZO_CUDA_ATTN_CHUNK overrides it.
	attnChunk int
	attnPtrs  devArray // the batched GEMMs' pointer arrays
	// stack: the model stacks q|k|v and gate|up into one product each
	// (tensor.Stacker), with $MEAZO_CUDA_STACK=1. Off by default: cuBLAS runs
	// Qwen3-0.6B's stacked q|k|v 30 % faster than apart at 1024 rows, but
	// with the copies that split the product the model on an H100 was up to
	// 9 % slower or 6 % faster by shape (docs/PERFORMANCE.md).
	stack bool
}

// StackEnv names the variable that, set to 1, has the model stack its
// projections (Backend.StackProjections).
const StackEnv = "MEAZO_CUDA_STACK"

// StackProjections reports whether the model should multiply q|k|v and
// gate|up stacked (tensor.Stacker): $MEAZO_CUDA_STACK=1.
func (b *Backend) StackProjections() bool { return b.stack }

// AttentionEnv names the variable that overrides the choice of attention
// kernel: "rows" for attention alone (a block per query), "tiled" for
// attention_tiled wherever it can run, "gemm" for attentionGEMM wherever it
// can run; unset or anything else, the default (see tiledMinHD and
// gemmMinKeys).
const AttentionEnv = "MEAZO_CUDA_ATTENTION"

// narrowNorm is the widest row RMSNorm gives a warp (rms_norm_narrow)
// rather than a block of 256 threads (rms_norm).
const narrowNorm = 256

// AttnChunkEnv names the variable that sets how many queries attentionGEMM
// takes at a time (attnChunk; 0: all at once).
const AttnChunkEnv = "MEAZO_CUDA_ATTN_CHUNK"

// defaultAttnChunk is attnChunk's default. Measured on an H200
// (docs/PERFORMANCE.md): chunks of 128 queries took Qwen3-0.6B's forward
// 1-4 % below one chunk at 8×300 and 8×512, 64 a little less; Llama-3.2-1B's
// within 1 %.
const defaultAttnChunk = 128

// attnMaxChunks bounds the chunks of one attentionGEMM call: three launches
// each.
const attnMaxChunks = 8

// tiledExtraShm is what attention_tiled's static shared arrays take beyond
// the 4 KiB allowed for attention's: its dynamic shared memory may be
// maxShm − tiledExtraShm.
const tiledExtraShm = 6 << 10

// attnTile is the most queries attention_tiled takes per block (ATTN_TQ);
// it takes tiles of 8, 16 or 32.
const attnTile = 32

// tiledShm is attention_tiled's dynamic shared memory for tiles of tq
// queries: the queries [hd][tq] and the probabilities [capacity][tq+4].
func tiledShm(tq, hd, capacity int) int { return 4 * (hd*tq + capacity*(tq+4)) }

// cached is a freed allocation held for reuse; freed orders blocks by age.
type cached struct{ ptr, freed uint64 }

// devArray is a device scratch array that grows as needed.
type devArray struct {
	ptr   uint64
	bytes uint64
}

// Open initialises the CUDA driver and cuBLAS on GPU ordinal device and
// loads the kernels. Its error says in one line what is missing: the driver
// library, cuBLAS, a device, or memory.
func Open(device int) (*Backend, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, desc, maxShm, err := openGPU(device)
	if err != nil {
		return nil, err
	}
	b := newBackend(g, desc, maxShm)
	b.arith = g.arith + b.arith
	return b, nil
}

func newBackend(dev device, desc string, maxShm int) *Backend {
	k := os.Getenv(AttentionEnv)
	// By default: attentionGEMM from 256 slots, below that attention_tiled
	// for heads of 128 and attention for the others.
	minHD, minKeys := 128, 256
	switch k {
	case "rows":
		minHD, minKeys = 0, 0
	case "tiled":
		minHD, minKeys = 1, 0
	case "gemm":
		minKeys = 1
	}
	// The settings below change the bits (docs/BACKENDS.md): each goes into
	// the description and into Arithmetic.
	var settings string
	if k == "rows" || k == "tiled" || k == "gemm" {
		settings += "; attention kernel: " + k + " (" + AttentionEnv + ")"
	}
	stack := os.Getenv(StackEnv) == "1"
	if stack {
		settings += "; projections stacked (" + StackEnv + ")"
	}
	chunk := defaultAttnChunk
	if v, ok := os.LookupEnv(AttnChunkEnv); ok {
		if c, err := strconv.Atoi(v); err == nil && c >= 0 {
			chunk = c
			settings += fmt.Sprintf("; attention chunks of %d queries (%s)", c, AttnChunkEnv)
		}
	}
	return &Backend{dev: dev, desc: desc + settings, arith: settings, maxShm: maxShm, free: map[uint64][]cached{}, live: map[uint64]uint64{}, tiledMinHD: minHD,
		gemmMinKeys: minKeys, attnChunk: chunk, stack: stack}
}

// failf reports a device failure (see tensor.DeviceError).
func failf(format string, args ...any) { tensor.Fail(fmt.Errorf(format, args...)) }

// fail reports a device failure; one that leaves the context unusable (a
// kernel fault) also fails every later call at once, instead of at some
// later synchronising call with a confusing message.
func (b *Backend) fail(err error) {
	var de *driverError
	if errors.As(err, &de) && de.sticky() {
		b.poisoned = err
	}
	tensor.Fail(err)
}

// need panics with a programming-error message unless ok, as the CPU
// backend's index checks do: a bad argument must never reach a kernel,
// where it would fault the GPU context.
func need(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("cuda: "+format, args...))
	}
}

// enter makes the calling goroutine the backend's only user until the
// returned function runs, on an OS thread with the device's context
// current.
func (b *Backend) enter() func() {
	b.mu.Lock()
	runtime.LockOSThread()
	if b.closed {
		runtime.UnlockOSThread()
		b.mu.Unlock()
		panic("cuda: backend used after Close")
	}
	err := b.poisoned
	if err == nil {
		err = b.dev.bind()
	}
	if err != nil {
		runtime.UnlockOSThread()
		b.mu.Unlock()
		b.fail(err)
	}
	return func() {
		runtime.UnlockOSThread()
		b.mu.Unlock()
	}
}

func (b *Backend) Name() string     { return "cuda" }
func (b *Backend) Describe() string { return b.desc }

// Arithmetic: the GPU's name and compute capability and cuBLAS's version
// (cuBLAS picks its kernels by both), and the settings that change the bits.
func (b *Backend) Arithmetic() string { return b.arith }

// Close frees every allocation the backend still holds and releases the
// device.
func (b *Backend) Close() error {
	defer b.enter()()
	b.release()
	b.closed = true
	return nil
}

func (b *Backend) release() {
	for p, bytes := range b.live {
		b.devFree(p, bytes)
	}
	for c, ps := range b.free {
		for _, x := range ps {
			b.devFree(x.ptr, c)
		}
	}
	for _, a := range []*devArray{&b.ids, &b.ids2, &b.mask, &b.wide, &b.out, &b.attnPtrs} {
		if a.ptr != 0 {
			b.devFree(a.ptr, a.bytes)
		}
	}
	b.live, b.free = map[uint64]uint64{}, map[uint64][]cached{}
	b.liveBytes, b.cachedBytes = 0, 0
	b.dev.close()
}

// DeviceMemory implements tensor.DeviceMemory: the bytes allocated from the
// GPU now (weights, buffers, the cache of freed buffers, scratch arrays) and
// the most at any time since Open. The CUDA context and cuBLAS's workspace
// are not counted (nvidia-smi shows them).
func (b *Backend) DeviceMemory() (held, peak uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.heldBytes, b.peakHeld
}

// Live implements backendtest.Counter.
func (b *Backend) Live() (bufs, weights, caches int) {
	defer b.enter()()
	return len(b.live) - b.weights - b.cacheAllocs, b.weights, b.caches
}

// Device memory is cached as PyTorch's allocator caches it: a freed buffer
// goes to a free list and the next request of its size takes it without a
// cuMemAlloc (which is slow, and cuMemFree synchronises the device). Sizes
// are rounded up to one of eight classes per power of two (at most 12.5 %
// more), so that buffers of nearby sizes share blocks: a training run's
// batches differ in length from step to step, and with exact sizes every new
// length took fresh memory until the GPU was full (a 200-step SQuAD run held
// all 140 GB of an H200). The cache keeps at most as many bytes as the
// largest working set seen (peakBytes), dropping the blocks freed longest
// ago first, so the device holds at most the weights and twice the working
// set, and what the last step freed stays for the next.

// minCache is the least the cache may keep whatever the working set.
const minCache = 256 << 20

// sizeClass rounds bytes up to its allocation class: a multiple of 256
// bytes up to 2 KiB, above that one of the eight multiples of 2^(e-3)
// between 2^e and 2^(e+1).
func sizeClass(bytes uint64) uint64 {
	bytes = max(bytes, 4)
	if bytes <= 2048 {
		return (bytes + 255) &^ 255
	}
	step := uint64(1) << (bits.Len64(bytes-1) - 4) // 2^(e-3) for 2^e < bytes <= 2^(e+1)
	return (bytes + step - 1) &^ (step - 1)
}

// malloc returns device memory for a buffer of bytes: a cached block of its
// size class, else a new one (see alloc for out-of-memory).
func (b *Backend) malloc(bytes uint64) uint64 {
	class := sizeClass(bytes)
	var p uint64
	if ps := b.free[class]; len(ps) > 0 {
		p = ps[len(ps)-1].ptr
		b.free[class] = ps[:len(ps)-1]
		b.cachedBytes -= class
	} else {
		p = b.alloc(class)
	}
	b.live[p] = class
	b.liveBytes += class
	b.peakBytes = max(b.peakBytes, b.liveBytes)
	return p
}

// alloc asks the device for bytes; on out-of-memory it returns every cached
// block to the driver and tries once more before failing with the sizes
// involved.
func (b *Backend) alloc(bytes uint64) uint64 {
	p, err := b.dev.malloc(bytes)
	if err == errNoMemory {
		b.trim(0)
		p, err = b.dev.malloc(bytes)
	}
	if err == errNoMemory {
		free, total := b.dev.memInfo()
		err = fmt.Errorf("cuda: out of device memory: %.3g GB asked for, %.3g GB free of %.3g GB", float64(bytes)/1e9, float64(free)/1e9, float64(total)/1e9)
	}
	if err != nil {
		b.fail(err)
	}
	b.heldBytes += bytes
	b.peakHeld = max(b.peakHeld, b.heldBytes)
	return p
}

// devFree returns an allocation of bytes to the device.
func (b *Backend) devFree(p, bytes uint64) {
	b.dev.free(p)
	b.heldBytes -= bytes
}

// recycle returns a buffer's allocation to the cache for reuse, and trims
// the cache to the largest working set seen.
func (b *Backend) recycle(p uint64) {
	bytes, ok := b.live[p]
	if !ok {
		panic("cuda: Free of a buffer that is not alive (a view, or freed twice)")
	}
	delete(b.live, p)
	b.liveBytes -= bytes
	b.freed++
	b.free[bytes] = append(b.free[bytes], cached{p, b.freed})
	b.cachedBytes += bytes
	if limit := max(minCache, b.peakBytes); b.cachedBytes > limit {
		b.trim(limit)
	}
}

// trim returns cached blocks to the driver, those freed longest ago first,
// until the cache holds at most limit bytes.
func (b *Backend) trim(limit uint64) {
	type block struct{ class, ptr, freed uint64 }
	var all []block
	for c, ps := range b.free {
		for _, x := range ps {
			all = append(all, block{c, x.ptr, x.freed})
		}
	}
	slices.SortFunc(all, func(x, y block) int { return cmp.Compare(x.freed, y.freed) })
	clear(b.free)
	for _, x := range all {
		if b.cachedBytes > limit {
			b.devFree(x.ptr, x.class)
			b.cachedBytes -= x.class
			continue
		}
		b.free[x.class] = append(b.free[x.class], cached{x.ptr, x.freed})
	}
}

// grow makes a at least bytes long (contents not kept).
func (b *Backend) grow(a *devArray, bytes uint64) {
	if a.bytes >= bytes {
		return
	}
	if a.ptr != 0 {
		b.devFree(a.ptr, a.bytes)
		a.ptr, a.bytes = 0, 0
	}
	bytes = max(bytes, 1024)
	a.ptr, a.bytes = b.alloc(bytes), bytes
}

// upload copies host bytes to device memory at p.
func (b *Backend) upload(p uint64, src unsafe.Pointer, bytes uint64) {
	if bytes == 0 {
		return
	}
	if err := b.dev.htod(p, src, bytes); err != nil {
		b.fail(err)
	}
}

// uploadInts copies ints to a as int32.
func (b *Backend) uploadInts(a *devArray, v []int) uint64 {
	h := make([]int32, len(v))
	for i, x := range v {
		h[i] = int32(x)
	}
	b.grow(a, uint64(4*len(h)))
	if len(h) > 0 {
		b.upload(a.ptr, unsafe.Pointer(&h[0]), uint64(4*len(h)))
	}
	return a.ptr
}

// buf is a device buffer of float32, or a view of one (root 0).
type buf struct {
	ptr  uint64 // first element
	n    int
	root uint64 // the allocation, for Free; 0 for a view
}

func (v buf) Len() int { return v.n }
func (v buf) Slice(lo, hi int) tensor.Buf {
	if lo < 0 || hi < lo || hi > v.n {
		panic(fmt.Sprintf("cuda: Slice(%d, %d) of a buffer of %d floats", lo, hi, v.n))
	}
	return buf{ptr: v.ptr + uint64(4*lo), n: hi - lo}
}

func dbuf(x tensor.Buf) buf {
	v, ok := x.(buf)
	if !ok {
		panic(fmt.Sprintf("cuda: CUDA backend given a %T buffer", x))
	}
	return v
}

func (b *Backend) Alloc(n int) tensor.Buf {
	defer b.enter()()
	p := b.malloc(uint64(4 * n))
	if n > 0 {
		if err := b.dev.memsetD32(p, 0, uint64(n)); err != nil {
			b.fail(err)
		}
	}
	return buf{ptr: p, n: n, root: p}
}

func (b *Backend) FromHost(src []float32) tensor.Buf {
	defer b.enter()()
	p := b.malloc(uint64(4 * len(src)))
	if len(src) > 0 {
		b.upload(p, unsafe.Pointer(&src[0]), uint64(4*len(src)))
	}
	return buf{ptr: p, n: len(src), root: p}
}

func (b *Backend) ToHost(x tensor.Buf) []float32 {
	defer b.enter()()
	v := dbuf(x)
	h := make([]float32, v.n)
	if v.n > 0 {
		b.download(unsafe.Pointer(&h[0]), v.ptr, uint64(4*v.n))
	}
	return h
}

func (b *Backend) Free(bufs ...tensor.Buf) {
	defer b.enter()()
	for _, x := range bufs {
		v := dbuf(x)
		if v.root == 0 {
			panic("cuda: Free of a view (free the buffer it was sliced from)")
		}
		b.recycle(v.root)
	}
}

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
	defer b.enter()()
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

// f32Weight returns a float32 copy of w's matrix for cuBLAS: w itself, or
// its bfloat16 values widened into the scratch array.
func (b *Backend) f32Weight(w *weight) uint64 {
	if !w.bf16 {
		return w.ptr
	}
	n := w.n * w.k
	b.grow(&b.wide, uint64(4*n))
	b.launch("bf16_to_f32", blocks1D(n), 256, 0, devPtr(b.wide.ptr), devPtr(w.ptr), i64Arg(n))
	return b.wide.ptr
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

func (b *Backend) Copy(dst, src tensor.Buf) {
	defer b.enter()()
	d, s := dbuf(dst), dbuf(src)
	need(s.n >= d.n, "Copy: %d floats from %d", d.n, s.n)
	if d.n > 0 {
		if err := b.dev.dtod(d.ptr, s.ptr, uint64(4*d.n)); err != nil {
			b.fail(err)
		}
	}
}

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
	alpha, beta := float32(1), float32(0)
	if add {
		alpha, beta = s, 1
	}
	if err := b.dev.sgemm(opT, opN, n, rows, k, w, k, x, k, y, n, alpha, beta); err != nil {
		b.fail(err)
	}
}

func (b *Backend) MatMul(y, x tensor.Buf, rows int, wt tensor.Weight) {
	defer b.enter()()
	w := dweight(wt)
	need(x.Len() >= rows*w.k && y.Len() >= rows*w.n, "MatMul: %d rows of %d×%d with x of %d and y of %d floats", rows, w.n, w.k, x.Len(), y.Len())
	b.gemm(dbuf(y).ptr, dbuf(x).ptr, b.f32Weight(w), rows, w.n, w.k, false, 1)
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
	b.gemm(dbuf(y).ptr, dbuf(x).ptr, b.f32Weight(w), rows, w.n, w.k, true, 1)
}

func (b *Backend) MatMulNTAdd(y, x, m tensor.Buf, rows, n, k int, s float32) {
	defer b.enter()()
	need(x.Len() >= rows*k && y.Len() >= rows*n && m.Len() >= n*k, "MatMulNTAdd: %d rows, %d×%d, with x, y, m of %d, %d, %d floats", rows, n, k, x.Len(), y.Len(), m.Len())
	b.gemm(dbuf(y).ptr, dbuf(x).ptr, dbuf(m).ptr, rows, n, k, true, s)
}

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

func (b *Backend) SiLUMul(gate, up tensor.Buf) {
	defer b.enter()()
	n := gate.Len()
	need(up.Len() >= n, "SiLUMul: %d floats with %d", n, up.Len())
	b.launch("silu_mul", blocks1D(n), 256, 0, devPtr(dbuf(gate).ptr), devPtr(dbuf(up).ptr), i64Arg(n))
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

// kvCache holds per layer the keys [seqs][kvHeads][hd][capacity]
// (transposed) and values [seqs][kvHeads][capacity][hd].
type kvCache struct {
	seqs, kvHeads, capacity, hd int
	k, v                        []uint64
}

func (c *kvCache) Capacity() int { return c.capacity }

func (b *Backend) NewKVCache(seqs, kvHeads, capacity, hd, layers int) tensor.KVCache {
	defer b.enter()()
	if need := 4 * (capacity + hd); need > b.maxShm {
		failf("cuda: attention over %d cache slots needs %d bytes of shared memory per block; this GPU allows %d", capacity, need, b.maxShm)
	}
	c := &kvCache{seqs: seqs, kvHeads: kvHeads, capacity: capacity, hd: hd}
	n := seqs * kvHeads * capacity * hd
	for range layers {
		for _, dst := range []*[]uint64{&c.k, &c.v} {
			p := b.malloc(uint64(4 * n))
			if n > 0 {
				if err := b.dev.memsetD32(p, 0, uint64(n)); err != nil {
					b.fail(err)
				}
			}
			*dst = append(*dst, p)
		}
	}
	b.caches++
	b.cacheAllocs += 2 * layers
	return c
}

func (b *Backend) FreeKVCache(x tensor.KVCache) {
	defer b.enter()()
	c := x.(*kvCache)
	for i := range c.k {
		b.recycle(c.k[i])
		b.recycle(c.v[i])
	}
	b.caches--
	b.cacheAllocs -= 2 * len(c.k)
}

func (b *Backend) Attention(out, q, k, v tensor.Buf, x tensor.KVCache, layer int, a tensor.AttentionArgs) {
	defer b.enter()()
	c, ok := x.(*kvCache)
	if !ok {
		panic(fmt.Sprintf("cuda: CUDA backend given a %T cache", x))
	}
	hd, kvh, heads, tn := a.HeadDim, a.KVHeads, a.Heads, a.Tokens
	switch {
	case hd != c.hd || kvh != c.kvHeads || kvh <= 0 || heads%kvh != 0:
		panic(fmt.Sprintf("cuda: Attention: %d heads, %d kv heads of width %d; the cache holds %d kv heads of width %d", heads, kvh, hd, c.kvHeads, c.hd))
	case a.Seqs < 0 || a.Seqs > c.seqs || layer < 0 || layer >= len(c.k):
		panic(fmt.Sprintf("cuda: Attention: %d sequences at layer %d; the cache holds %d sequences in %d layers", a.Seqs, layer, c.seqs, len(c.k)))
	case a.Start < 0 || tn < 0 || a.Start+tn > c.capacity:
		panic(fmt.Sprintf("cuda: Attention: slots [%d, %d) outside the capacity %d", a.Start, a.Start+tn, c.capacity))
	case len(a.Mask) < a.Seqs*c.capacity:
		panic(fmt.Sprintf("cuda: Attention: mask of %d entries, want %d sequences × %d slots", len(a.Mask), a.Seqs, c.capacity))
	case q.Len() < a.Seqs*tn*heads*hd || out.Len() < q.Len() || k.Len() < a.Seqs*tn*kvh*hd || v.Len() < k.Len():
		panic(fmt.Sprintf("cuda: Attention: q/out/k/v of %d/%d/%d/%d floats are too short", q.Len(), out.Len(), k.Len(), v.Len()))
	}
	if a.Seqs == 0 || tn == 0 {
		return
	}
	// The model passes one mask to every layer of a step: upload it once.
	mask := a.Mask[:a.Seqs*c.capacity]
	if !slices.EqualFunc(b.maskNow, mask, func(x int32, y int) bool { return int(x) == y }) {
		b.uploadInts(&b.mask, mask)
		b.maskNow = b.maskNow[:0]
		for _, m := range mask {
			b.maskNow = append(b.maskNow, int32(m))
		}
	}
	b.launch("store_kv", [3]uint32{uint32((tn + 31) / 32), uint32(kvh), uint32(a.Seqs)}, 256, 0, devPtr(c.k[layer]), devPtr(c.v[layer]), devPtr(dbuf(k).ptr), devPtr(dbuf(v).ptr),
		i32Arg(a.Seqs), i32Arg(tn), i32Arg(kvh), i32Arg(hd), i32Arg(c.capacity), i32Arg(a.Start))
	args := []any{devPtr(dbuf(out).ptr), devPtr(dbuf(q).ptr), devPtr(c.k[layer]), devPtr(c.v[layer]), devPtr(b.mask.ptr),
		i32Arg(tn), i32Arg(heads), i32Arg(kvh), i32Arg(hd), i32Arg(c.capacity), i32Arg(a.Start), i32Arg(a.Window), f32Arg(a.Scale)}
	if n := a.Start + tn; b.gemmMinKeys > 0 && tn > 1 && n >= b.gemmMinKeys && 4*a.Seqs*heads*tn*n <= attnGEMMMaxBytes {
		b.attentionGEMM(out, q, c, layer, a)
		return
	}
	if b.tiledMinHD > 0 && tn > 1 && hd >= b.tiledMinHD && hd <= 128 {
		tq := 8 // queries per block: enough for the new tokens, as many as the shared memory allows
		for tq < attnTile && tq < tn {
			tq *= 2
		}
		for tq > 8 && tiledShm(tq, hd, c.capacity) > b.maxShm-tiledExtraShm {
			tq /= 2
		}
		if shm := tiledShm(tq, hd, c.capacity); shm <= b.maxShm-tiledExtraShm {
			b.launch("attention_tiled", [3]uint32{uint32((tn + tq - 1) / tq), uint32(heads), uint32(a.Seqs)}, 128, uint32(shm),
				append(args, i32Arg(tq))...)
			return
		}
	}
	b.launch("attention", [3]uint32{uint32(tn), uint32(heads), uint32(a.Seqs)}, 128, uint32(4*(hd+c.capacity)), args...)
}

// attnGEMMMaxBytes bounds the scores attentionGEMM holds at once
// (sequences × heads × new tokens × slots floats); a call that needs more
// goes to the other kernels.
const attnGEMMMaxBytes = 1 << 30

// attentionGEMM computes attention as PyTorch's eager attention does, in
// three steps over every (sequence, query head) at once: the raw scores
// q·kᵀ of the new tokens against the slots they may see by one batched
// cuBLAS GEMM, attention_softmax (attention's softmax from the scores on:
// scale, masks, max, Exp, the float64 normaliser; zeros past each query's
// slot and for a query that sees no key), then p·V by a second batched
// GEMM (a query that sees no key gets 0·v: zeros). The new tokens go in
// chunks (attnChunkLen): a chunk's queries see at most the slots j < n =
// Start + its end, so its scores stop there, and the GEMMs skip most of
// what the causal mask would zero. The GEMMs sum in cuBLAS's order, so the
// outputs are not the CPU backend's bits (the other kernels' are), but they
// are the same run to run. In column-major terms, with a head's keys
// stored transposed (kᵀ [hd][capacity]) and its values as [capacity][hd]:
// scoresᵀ (n × tokens) = kᵀᵀ · qᵀ and outᵀ (hd × tokens) = vᵀ · scoresᵀ,
// each operand a row-major block read with its row stride.
func (b *Backend) attentionGEMM(out, q tensor.Buf, c *kvCache, layer int, a tensor.AttentionArgs) {
	hd, kvh, heads, tn := a.HeadDim, a.KVHeads, a.Heads, a.Tokens
	rep, batch := heads/kvh, a.Seqs*heads
	chunk := b.attnChunkLen(tn)
	chunks := (tn + chunk - 1) / chunk
	scores := b.malloc(uint64(4 * batch * chunk * (a.Start + tn)))
	defer b.recycle(scores)
	// Per chunk, per (sequence s, head h), five arrays: kᵀ, q, scores, v, out.
	ptrs := make([]uint64, 5*batch*chunks)
	qp, op := dbuf(q).ptr, dbuf(out).ptr
	// bounds: chunk ci's first new token, its tokens, and the slots they see.
	bounds := func(ci int) (t0, tc, n int) {
		t0 = ci * chunk
		return t0, min(chunk, tn-t0), a.Start + min(tn, t0+chunk)
	}
	for ci := range chunks {
		t0, tc, n := bounds(ci)
		p := ptrs[5*batch*ci:]
		for s := range a.Seqs {
			for h := range heads {
				i, kv, row := s*heads+h, uint64(s*kvh+h/rep), uint64((s*tn+t0)*heads+h)
				p[i] = c.k[layer] + 4*kv*uint64(hd*c.capacity)
				p[batch+i] = qp + 4*row*uint64(hd)
				p[2*batch+i] = scores + 4*uint64(i*tc*n)
				p[3*batch+i] = c.v[layer] + 4*kv*uint64(c.capacity*hd)
				p[4*batch+i] = op + 4*row*uint64(hd)
			}
		}
	}
	b.grow(&b.attnPtrs, uint64(8*len(ptrs)))
	b.upload(b.attnPtrs.ptr, unsafe.Pointer(&ptrs[0]), uint64(8*len(ptrs)))
	for ci := range chunks {
		t0, tc, n := bounds(ci)
		arr := func(k int) uint64 { return b.attnPtrs.ptr + uint64(8*(5*ci+k)*batch) }
		if err := b.dev.sgemmBatched(opN, opN, n, tc, hd, arr(0), c.capacity, arr(1), heads*hd, arr(2), n, batch); err != nil {
			b.fail(err)
		}
		b.launch("attention_softmax", [3]uint32{uint32(tc), uint32(heads), uint32(a.Seqs)}, 128, uint32(4*n),
			devPtr(scores), devPtr(b.mask.ptr), i32Arg(tc), i32Arg(heads), i32Arg(n), i32Arg(c.capacity),
			i32Arg(a.Start+t0), i32Arg(a.Window), f32Arg(a.Scale))
		if err := b.dev.sgemmBatched(opN, opN, hd, tc, n, arr(3), hd, arr(2), n, arr(4), heads*hd, batch); err != nil {
			b.fail(err)
		}
	}
}

// attnChunkLen is how many of tn new tokens attentionGEMM takes at a time:
// attnChunk, or the multiple of it that makes at most attnMaxChunks
// chunks; all of them with attnChunk 0.
func (b *Backend) attnChunkLen(tn int) int {
	if b.attnChunk <= 0 || tn <= b.attnChunk {
		return tn
	}
	c := b.attnChunk
	if per := (tn + attnMaxChunks - 1) / attnMaxChunks; per > c {
		c = (per + c - 1) / c * c
	}
	return c
}

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

func (b *Backend) download(dst unsafe.Pointer, src uint64, bytes uint64) {
	if err := b.dev.dtoh(dst, src, bytes); err != nil {
		b.fail(err)
	}
}

var _ tensor.Backend = (*Backend)(nil)
