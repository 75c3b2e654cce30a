// Package cuda is the NVIDIA GPU implementation of tensor.Backend, in pure
// Go: the CUDA driver API (libcuda.so.1, from the NVIDIA driver) and cuBLAS
// (libcublas.so.13, .12 or .11) are loaded at run time with purego, so the
// binaries need no cgo and run unchanged on machines without a GPU, where
// Open says what is missing.
//
// Weights live in device memory from Pack on (float32, or bfloat16 widened
// exactly before each product); the matrix products are cuBLAS SGEMMs in
// full float32 (TF32 off); everything else runs this package's kernels. All
// work goes to the default stream, in order, so results are bit-identical
// run to run; kernels/common.cuh says how they relate to the CPU backend's.
//
// The files by job: backend.go opens the backend and serialises its users;
// options.go holds its settings; memory.go is the caching pool, buffers and
// copies; weights.go the frozen matrices; matmul.go the products (cuBLAS);
// elementwise.go the adds, norms, RoPE and gathers; attention.go the KV
// cache and attention's fused kernels, attention_gemm.go attention through
// batched GEMMs; loss.go cross-entropy and argmax; trainer.go and
// trainer_update.go full-parameter ZO (tensor.Trainer: weights read
// perturbed, and updated in place). kernels.go launches the
// kernels of kernels/ (one op per .cu file), which ptxgen compiles at go
// generate time into the embedded kernels.ptx; gpu.go, driver.go and
// cublas.go reach the GPU through a small interface (device.go) that the
// tests also implement with an emulator.
package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/meazo-go/meazo/tensor"
)

func init() {
	tensor.Register("cuda", 10, func(o tensor.Options) (tensor.Backend, error) {
		b, err := Open(optionsOf(o))
		if err != nil {
			return nil, err
		}
		return b, nil
	})
}

// Backend computes on one GPU. Its methods may be called from any
// goroutine, one at a time (a mutex serialises them): each binds the
// device's primary context to the calling OS thread.
type Backend struct {
	mu           sync.Mutex
	dev          device
	desc         string
	arith        string              // Arithmetic: the GPU and cuBLAS (Open), then the settings that change the bits
	maxShm       int                 // dynamic shared memory a block may use (attention)
	free         map[uint64][]cached // freed allocations by size class, for reuse, oldest first
	freed        uint64              // recycle calls so far: the age of a cached block
	live         map[uint64]uint64   // allocation → bytes, for Free and the leak check
	liveBytes    uint64              // bytes live in buffers and caches (weights not counted)
	peakBytes    uint64              // the most liveBytes has been: the largest working set
	cachedBytes  uint64              // bytes in free, held for reuse
	exactAllocs  bool                // each buffer and scratch array an allocation of its own size, freed at Free: the emulator's memory checker (checkers_test.go)
	heldBytes    uint64              // bytes allocated from the device and not yet returned
	peakHeld     uint64              // the most heldBytes has been (DeviceMemory)
	weights      int
	caches       int
	cacheAllocs  int      // allocations held by KV caches (two per layer), counted in live too
	ids, ids2    devArray // staging for row indices and targets
	mask         devArray // the attention mask of the current step
	maskNow      []int32  // what mask holds
	bf16Products bool     // Options.BF16Products
	tf32x3       bool     // Options.TF32x3: gemm_3xtf32 where fits3xTF32 and split3xTF32 allow
	sms          int      // the GPU's multiprocessors, for split3xTF32 (0: unknown, or Options.TF32x3AllShapes: every shape, unsplit)
	tf32x3MinK   int      // the shortest product it takes (0: gemm3xTF32MinK; the tests set fewer)
	tf32x3Split  int      // tests: the slices of k of every product it takes, up to k/32 (0: split3xTF32's)
	out          devArray // small results (cross-entropy, argmax)
	closed       bool
	poisoned     error // a sticky device error: every later call fails with it
	// tiledMinHD: attention_tiled computes attention for calls with more
	// than one new token and a head width in [tiledMinHD, 128]; 0 turns it
	// off. Both kernels give the same bits; which is faster was measured on
	// an H200 (docs/PERFORMANCE.md): attention_tiled for Qwen3-0.6B's heads
	// of 128 (2-7 % off a forward or a ZO step), attention for
	// Llama-3.2-1B's of 64 (equal at 8×128 and 8×300, 3-5 % faster at 8×512), hence
	// the default 128. Options.Attention overrides it.
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
	// Options.AttentionChunk sets it.
	attnChunk int
	attnPtrs  devArray // the batched GEMMs' pointer arrays
	// encGEMMMinTokens: EncoderAttention runs the batched GEMMs
	// (encoderAttentionGEMM) for sequences of at least encGEMMMinTokens
	// tokens, the exact kernel encoder_attention below; 0 turns the GEMMs
	// off. Options.Attention sets it (attentionPaths).
	encGEMMMinTokens int
	// encScoreBytes bounds the scores encoderAttentionGEMM holds at once
	// (0: attnGEMMMaxBytes); the tests set less, to take pairs in groups.
	encScoreBytes int
	stack         bool // Options.StackProjections
	// Full-parameter ZO (trainer.go, trainer_update.go): the directions of
	// an update on the device and as last uploaded, the updates' sums of
	// squares; perturbChunk, the most elements of a weight formed perturbed
	// at once (0: defaultPerturbChunk); paired (Options.PairedProducts):
	// a direction's two products as one batched call, whose pointer arrays
	// pairPtrs holds.
	dirs         devArray
	dirsTable    []uint64
	squares      squares
	perturbChunk int
	paired       bool
	pairPtrs     devArray
	// wideChunk: the most elements of a bfloat16 weight widened at once
	// for a plain product (0: defaultWideChunk; matmul.go).
	wideChunk int
}

// Open initialises the CUDA driver and cuBLAS on GPU o.Device and loads
// the kernels. Its error says in one line what is missing: the driver
// library, cuBLAS, a device, or memory (or which option is wrong).
func Open(o Options) (*Backend, error) {
	if err := o.check(); err != nil { // before the GPU
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hopper := hopperNo
	switch {
	case o.TF32x3:
		hopper = hopperNeeded
	case o.TF32x3Auto:
		hopper = hopperIfAble
	}
	g, desc, maxShm, err := openGPU(o.Device, o.SyncUploads, hopper)
	if err != nil {
		return nil, err
	}
	b, err := newBackend(g, desc, maxShm, o)
	if err != nil {
		g.close()
		return nil, err
	}
	b.arith = g.arith + b.arith
	return b, nil
}

// newBackend makes a backend on dev (described by desc, allowing blocks
// maxShm bytes of dynamic shared memory) with options o.
func newBackend(dev device, desc string, maxShm int, o Options) (*Backend, error) {
	minHD, minKeys, encMin, err := attentionPaths(o.Attention)
	if err != nil {
		return nil, err
	}
	chunk, err := attnChunkOf(o.AttentionChunk)
	if err != nil {
		return nil, err
	}
	hd, ok := dev.(hopperDevice)
	hopper := ok && hd.hasHopperKernels()
	if o.TF32x3 && !hopper {
		return nil, fmt.Errorf("cuda: float32 products on the tensor cores (MEAZO_CUDA_3XTF32) need a Hopper GPU with kernels_sm90a loaded; this device has none")
	}
	// TF32x3Auto is TF32x3 where the device can, and nothing elsewhere: the
	// same bits, so the same Arithmetic, as TF32x3 or as neither.
	o.TF32x3, o.TF32x3Auto = o.TF32x3 || o.TF32x3Auto && hopper, false
	sms := 0
	settings := o.settings() // they change the bits: into the description and Arithmetic
	if o.TF32x3 && !o.TF32x3AllShapes {
		// split3xTF32 chooses by the count: two GPUs of one name (a MIG
		// slice, another board) with other counts split otherwise.
		if sms = hd.multiprocessors(); sms > 0 { // the emulator's 0: every shape
			settings += fmt.Sprintf(", by its %d multiprocessors", sms)
		}
	}
	return &Backend{dev: dev, desc: desc + settings, arith: settings, maxShm: maxShm, free: map[uint64][]cached{},
		live: map[uint64]uint64{}, tiledMinHD: minHD, gemmMinKeys: minKeys, encGEMMMinTokens: encMin, attnChunk: chunk, stack: o.StackProjections,
		bf16Products: o.BF16Products, paired: o.PairedProducts, tf32x3: o.TF32x3, sms: sms}, nil
}

// hopperDevice is a device that may have loaded kernels_sm90a: a Hopper GPU
// asked for Options.TF32x3, or the kernel emulator (its wgmma a model of
// the tensor cores' arithmetic). multiprocessors is the number of its
// streaming multiprocessors, which decides which products fill it, and
// in how many slices of k (split3xTF32); 0 where that is not a question
// (the emulator).
type hopperDevice interface {
	hasHopperKernels() bool
	multiprocessors() int
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
// current. On a backend a kernel fault has poisoned it panics again with
// that fault's error.
func (b *Backend) enter() func() { return b.lock(false) }

// enterRelease is enter for the methods that only give memory back (Free,
// FreeWeight, FreeKVCache, Close): on a poisoned backend they still run,
// so that a caller's cleanup after a kernel fault (model.Free and Close,
// deferred outside tensor.Recover) does not panic again with the error
// already reported. What they ask of the device then fails quietly
// (cuMemFree's result is not read), and Close releases the context.
func (b *Backend) enterRelease() func() { return b.lock(true) }

func (b *Backend) lock(releasing bool) func() {
	b.mu.Lock()
	runtime.LockOSThread()
	if b.closed {
		runtime.UnlockOSThread()
		b.mu.Unlock()
		panic("cuda: backend used after Close")
	}
	err := b.poisoned
	switch {
	case err == nil:
		err = b.dev.bind()
	case releasing:
		b.dev.bind() // best effort: the context's own error is already reported
		err = nil
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
	defer b.enterRelease()()
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
	for _, a := range []*devArray{&b.ids, &b.ids2, &b.mask, &b.out, &b.attnPtrs, &b.dirs, &b.squares.dev, &b.pairPtrs} {
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

// ResetPeak starts DeviceMemory's peak again from what the backend holds
// now, so that a benchmark can measure the peak of what follows (meazo-bench
// fullstep: a step's, without the model's loading).
func (b *Backend) ResetPeak() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.peakHeld = b.heldBytes
}

// Live implements backendtest.Counter.
func (b *Backend) Live() (bufs, weights, caches int) {
	defer b.enter()()
	return len(b.live) - b.weights - b.cacheAllocs, b.weights, b.caches
}

// StackProjections reports whether the model should multiply q|k|v and
// gate|up stacked (tensor.Stacker): Options.StackProjections.
func (b *Backend) StackProjections() bool { return b.stack }

// BF16Products says whether the backend multiplies by bfloat16-stored
// weights in bfloat16 on the tensor cores (Options.BF16Products;
// tensor.BF16Multiplier).
func (b *Backend) BF16Products() bool { return b.bf16Products }

var (
	_ tensor.Backend        = (*Backend)(nil)
	_ tensor.BF16Multiplier = (*Backend)(nil)
)
