// The device memory of buffers: a caching pool over cuMemAlloc, buffers and
// views of them, and copies to and from the host.

package cuda

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

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

// cached is a freed allocation held for reuse; freed orders blocks by age.
type cached struct{ ptr, freed uint64 }

// devArray is a device scratch array that grows as needed.
type devArray struct {
	ptr   uint64
	bytes uint64
}

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
// size class, else a new one (see alloc for out-of-memory); under
// exactAllocs a new one of bytes.
func (b *Backend) malloc(bytes uint64) uint64 {
	class := sizeClass(bytes)
	if b.exactAllocs {
		class = max(bytes, 4)
	}
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
	if b.exactAllocs {
		b.devFree(p, bytes)
		return
	}
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

// grow makes a at least bytes long (contents not kept); under exactAllocs
// exactly bytes long, so that the memory checker sees a kernel's read past
// the index, mask or pointer array a launch was given (a shorter one in
// a larger array kept from before would hide it). UpdateWeight's partial
// sums keep their size while any is unread, so they are kept then too.
func (b *Backend) grow(a *devArray, bytes uint64) {
	if b.exactAllocs {
		bytes = max(bytes, 4)
		if a.bytes == bytes {
			return
		}
	} else if a.bytes >= bytes {
		return
	}
	if a.ptr != 0 {
		b.devFree(a.ptr, a.bytes)
		a.ptr, a.bytes = 0, 0
	}
	if !b.exactAllocs {
		bytes = max(bytes, 1024)
	}
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

// download copies bytes from device memory at src to the host.
func (b *Backend) download(dst unsafe.Pointer, src uint64, bytes uint64) {
	if err := b.dev.dtoh(dst, src, bytes); err != nil {
		b.fail(err)
	}
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
	return b.ToHostInto(x, make([]float32, x.Len()))
}

// ToHostInto implements tensor.HostReader: the download of ToHost into
// the caller's dst.
func (b *Backend) ToHostInto(x tensor.Buf, dst []float32) []float32 {
	defer b.enter()()
	v := dbuf(x)
	need(len(dst) >= v.n, "ToHostInto: %d floats into %d", v.n, len(dst))
	dst = dst[:v.n]
	if v.n > 0 {
		b.download(unsafe.Pointer(&dst[0]), v.ptr, uint64(4*v.n))
	}
	return dst
}

func (b *Backend) Free(bufs ...tensor.Buf) {
	defer b.enterRelease()()
	for _, x := range bufs {
		v := dbuf(x)
		if v.root == 0 {
			panic("cuda: Free of a view (free the buffer it was sliced from)")
		}
		b.recycle(v.root)
	}
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
