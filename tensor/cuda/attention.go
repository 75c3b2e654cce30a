// The KV cache and attention. Three paths give attention: two fused kernels
// (attention, a block per query; attention_tiled, a block per tile of
// queries), which give the CPU backend's bits, and the batched GEMMs around
// attention_softmax (attention_gemm.go). Attention picks one by the call's
// length and head width.

package cuda

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/tensor"
)

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
	defer b.enterRelease()()
	c := x.(*kvCache)
	for i := range c.k {
		b.recycle(c.k[i])
		b.recycle(c.v[i])
	}
	b.caches--
	b.cacheAllocs -= 2 * len(c.k)
}

// Attention stores the call's keys and values in the cache, then runs one
// of the three paths: the batched GEMMs for calls of more than one new
// token that see at least gemmMinKeys slots (and whose scores fit
// attnGEMMMaxBytes), attention_tiled for such calls with heads of
// [tiledMinHD, 128] where its tiles fit the shared memory, attention for
// the rest (decoding among them).
func (b *Backend) Attention(out, q, k, v tensor.Buf, x tensor.KVCache, layer int, a tensor.AttentionArgs) {
	defer b.enter()()
	c, ok := x.(*kvCache)
	if !ok {
		panic(fmt.Sprintf("cuda: CUDA backend given a %T cache", x))
	}
	checkAttention(out, q, k, v, c, layer, a)
	if a.Seqs == 0 || a.Tokens == 0 {
		return
	}
	b.uploadMask(a.Mask[:a.Seqs*c.capacity])
	b.storeKV(k, v, c, layer, a)
	tn, n := a.Tokens, a.Start+a.Tokens
	if b.gemmMinKeys > 0 && tn > 1 && n >= b.gemmMinKeys && 4*a.Seqs*a.Heads*tn*n <= attnGEMMMaxBytes {
		b.attentionGEMM(out, q, c, layer, a)
		return
	}
	args := []any{devPtr(dbuf(out).ptr), devPtr(dbuf(q).ptr), devPtr(c.k[layer]), devPtr(c.v[layer]), devPtr(b.mask.ptr),
		i32Arg(tn), i32Arg(a.Heads), i32Arg(a.KVHeads), i32Arg(a.HeadDim), i32Arg(c.capacity), i32Arg(a.Start), i32Arg(a.Window), f32Arg(a.Scale)}
	if b.tiledMinHD > 0 && tn > 1 && a.HeadDim >= b.tiledMinHD && a.HeadDim <= 128 && b.attentionTiled(c, a, args) {
		return
	}
	b.launch("attention", [3]uint32{uint32(tn), uint32(a.Heads), uint32(a.Seqs)}, 128, uint32(4*(a.HeadDim+c.capacity)), args...)
}

// checkAttention panics with a programming-error message unless the call's
// shapes fit the cache and the buffers.
func checkAttention(out, q, k, v tensor.Buf, c *kvCache, layer int, a tensor.AttentionArgs) {
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
}

// uploadMask makes b.mask hold mask. The model passes one mask to every
// layer of a step: it is uploaded once.
func (b *Backend) uploadMask(mask []int) {
	if slices.EqualFunc(b.maskNow, mask, func(x int32, y int) bool { return int(x) == y }) {
		return
	}
	b.maskNow = b.maskNow[:0] // until the upload is done: a failed one (out of memory in grow) must not leave it naming the mask
	b.uploadInts(&b.mask, mask)
	for _, m := range mask {
		b.maskNow = append(b.maskNow, int32(m))
	}
}

// storeKV writes the call's new keys and values at the cache's slots
// Start … Start+Tokens−1 (store_kv).
func (b *Backend) storeKV(k, v tensor.Buf, c *kvCache, layer int, a tensor.AttentionArgs) {
	b.launch("store_kv", [3]uint32{uint32((a.Tokens + 31) / 32), uint32(a.KVHeads), uint32(a.Seqs)}, 256, 0,
		devPtr(c.k[layer]), devPtr(c.v[layer]), devPtr(dbuf(k).ptr), devPtr(dbuf(v).ptr),
		i32Arg(a.Seqs), i32Arg(a.Tokens), i32Arg(a.KVHeads), i32Arg(a.HeadDim), i32Arg(c.capacity), i32Arg(a.Start))
}

// attentionTiled launches attention_tiled with attention's arguments and
// tiles of as many queries as the new tokens need (8, 16 or 32) and the
// shared memory allows; it reports false, launching nothing, where not even
// tiles of 8 fit.
func (b *Backend) attentionTiled(c *kvCache, a tensor.AttentionArgs, args []any) bool {
	tq := 8
	for tq < attnTile && tq < a.Tokens {
		tq *= 2
	}
	for tq > 8 && tiledShm(tq, a.HeadDim, c.capacity) > b.maxShm-tiledExtraShm {
		tq /= 2
	}
	shm := tiledShm(tq, a.HeadDim, c.capacity)
	if shm > b.maxShm-tiledExtraShm {
		return false
	}
	b.launch("attention_tiled", [3]uint32{uint32((a.Tokens + tq - 1) / tq), uint32(a.Heads), uint32(a.Seqs)}, 128, uint32(shm),
		append(args, i32Arg(tq))...)
	return true
}
