package cpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/meazo-go/meazo/tensor"
)

func init() { tensor.Register("cpu", 0, open) }

// open is the CPU backend's tensor.Opener: it sets the process's GEMM path
// and tile when o names them (SetGEMMPath, SetGEMMTile), then makes a
// backend with o's threads and stacking.
func open(o tensor.Options) (tensor.Backend, error) {
	if o.GEMMPath != "" {
		if err := SetGEMMPath(o.GEMMPath); err != nil {
			return nil, err
		}
	}
	if o.GEMMTile != 0 {
		if err := SetGEMMTile(o.GEMMTile); err != nil {
			return nil, err
		}
	}
	return New(Options{Threads: o.Threads, StackProjections: o.StackProjections}), nil
}

// Options configures a CPU backend.
type Options struct {
	// Threads is the number of worker goroutines every op may use; 0 means
	// runtime.GOMAXPROCS(0) at the time of each call. Results do not depend
	// on it.
	Threads int
	// StackProjections makes the backend a tensor.Stacker that says yes:
	// for tests of the model's stacked projections (no faster here).
	StackProjections bool
}

// Backend is the host implementation of tensor.Backend: buffers are Go
// float32 slices (HostBuf), weights are Packed panels, and every method runs
// this package's kernels on the backend's worker goroutines.
type Backend struct {
	wk    Workers
	stack bool
	// squares is the Σ Δθ² of the updates since the last UpdateSquares.
	squares float64
}

// New returns a CPU backend.
func New(o Options) *Backend { return &Backend{wk: Workers(o.Threads), stack: o.StackProjections} }

// StackProjections reports Options.StackProjections (tensor.Stacker).
func (b *Backend) StackProjections() bool { return b.stack }

// Threads reports the number of workers each op uses.
func (b *Backend) Threads() int { return b.wk.n() }

// HostBuf is the CPU backend's Buf: a float32 slice in host memory.
type HostBuf []float32

func (b HostBuf) Len() int                    { return len(b) }
func (b HostBuf) Slice(lo, hi int) tensor.Buf { return b[lo:hi] }

// host returns the slice behind a CPU buffer. A buffer from another backend
// is a programming error.
func host(b tensor.Buf) []float32 {
	h, ok := b.(HostBuf)
	if !ok {
		panic(fmt.Sprintf("cpu: CPU backend given a %T buffer", b))
	}
	return h
}

func packed(w tensor.Weight) *Packed {
	p, ok := w.(*Packed)
	if !ok {
		panic(fmt.Sprintf("cpu: CPU backend given a %T weight", w))
	}
	return p
}

func (*Backend) Name() string { return "cpu" }
func (*Backend) Describe() string {
	d := fmt.Sprintf("CPU, GEMM path %s, tile %s", GEMMPath(), GEMMTile())
	if v := unusedVectors(); v != "" {
		d += fmt.Sprintf(" (this build has no SIMD kernels and leaves the CPU's %s unused: build with GOEXPERIMENT=simd, as make build does; about 20x faster on an AVX-512 Xeon)", v)
	}
	return d
}

// Arithmetic: the GEMM path (each rounds its own way; neither the tile
// height nor the element-wise kernels' vector or scalar code changes the
// bits) and the architecture (the Go compiler fuses multiply-adds on arm64),
// with the amd64 level where it is not the default v1: with GOAMD64=v3 the
// compiler fuses them in any Go code whose products are not converted
// (ours are: TestScalarKernelsUnfused; the standard library's need not be).
func (*Backend) Arithmetic() string {
	s := fmt.Sprintf("cpu %s, GEMM path %s", runtime.GOARCH, GEMMPath())
	if amd64Level != "" && amd64Level != "v1" {
		s += " (GOAMD64=" + amd64Level + ")"
	}
	return s
}

// amd64Level is the GOAMD64 level this binary was built for, from its build
// information ("" where it has none, or on another architecture).
var amd64Level = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "GOAMD64" {
			return s.Value
		}
	}
	return ""
}()

func (*Backend) Alloc(n int) tensor.Buf            { return HostBuf(make([]float32, n)) }
func (*Backend) FromHost(src []float32) tensor.Buf { return HostBuf(src) }
func (*Backend) ToHost(b tensor.Buf) []float32     { return host(b) }
func (*Backend) Free(...tensor.Buf)                {} // the garbage collector frees host memory
func (*Backend) FreeKVCache(tensor.KVCache)        {}
func (*Backend) FreeWeight(tensor.Weight)          {}
func (*Backend) Close() error                      { return nil }
func (*Backend) Copy(dst, src tensor.Buf)          { copy(host(dst), host(src)[:dst.Len()]) }
func (b *Backend) Add(y, x tensor.Buf)             { Add(b.wk, host(y), host(x)) }
func (b *Backend) SiLUMul(gate, up tensor.Buf)     { SiLUMul(b.wk, host(gate), host(up)) }
func (b *Backend) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	MatMulPacked(b.wk, host(y), host(x), rows, packed(w))
}

// MatMulAdd is MatMul into a scratch product, then Add: the bits of the
// two calls it replaces.
func (b *Backend) MatMulAdd(y, x tensor.Buf, rows int, w tensor.Weight) {
	p := packed(w)
	tmp := getScratch(rows * p.N)
	MatMulPacked(b.wk, *tmp, host(x), rows, p)
	Add(b.wk, host(y)[:rows*p.N], *tmp)
	scratch.Put(tmp)
}

// MatMulNTAdd is MatMulNT into a scratch product, then AddScaled.
func (b *Backend) MatMulNTAdd(y, x, m tensor.Buf, rows, n, k int, s float32) {
	MatMulNTAdd(b.wk, host(y), host(x), host(m), rows, n, k, s)
}

func (b *Backend) Pack(w []float32, n, k int, bf16 bool) tensor.Weight {
	if bf16 {
		return PackBF16(w, n, k)
	}
	return Pack(b.wk, w, n, k)
}

func (b *Backend) Rows(dst tensor.Buf, w tensor.Weight, ids []int) {
	p, d := packed(w), host(dst)
	b.wk.For(len(ids), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p.Row(d[i*p.K:(i+1)*p.K], ids[i])
		}
	})
}

func (*Backend) Gather(dst, src tensor.Buf, width int, ids []int) {
	d, s := host(dst), host(src)
	for i, r := range ids {
		copy(d[i*width:(i+1)*width], s[r*width:(r+1)*width])
	}
}

func (b *Backend) MatMulNT(y, x, m tensor.Buf, rows, n, k int) {
	MatMulNT(b.wk, host(y), host(x), host(m), rows, n, k)
}

func (b *Backend) AddScaled(y, x tensor.Buf, s float32) { AddScaled(b.wk, host(y), host(x), s) }

func (b *Backend) RMSNorm(dst, x, weight tensor.Buf, rows, n int, eps float32) {
	RMSNorm(b.wk, host(dst), host(x), host(weight), rows, n, eps)
}

func (b *Backend) RoPE(x tensor.Buf, rows, heads, hd int, cos, sin tensor.Buf, tableRows int) {
	xh, ch, sh := host(x), host(cos), host(sin)
	half := hd / 2
	b.wk.For(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			p := r % tableRows
			c, s := ch[p*half:(p+1)*half], sh[p*half:(p+1)*half]
			for h := range heads {
				v := xh[(r*heads+h)*hd : (r*heads+h+1)*hd]
				rotateHalf(v[:half], v[half:], c, s)
			}
		}
	})
}

// rotateHalfScalar applies RoPE to one head split in halves: dimension i
// pairs with i+half (HF's rotate_half), not with i+1.
//
//	x'[i]      = x[i]·cos − x[i+half]·sin
//	x'[i+half] = x[i+half]·cos + x[i]·sin
func rotateHalfScalar(lo, hi, cos, sin []float32) {
	hi = hi[:len(lo)]
	for i, c := range cos[:len(lo)] {
		a, b := lo[i], hi[i]
		lo[i] = float32(a*c) - float32(b*sin[i]) // unfused, as the vector kernel (TestScalarKernelsUnfused)
		hi[i] = float32(b*c) + float32(a*sin[i])
	}
}

func (b *Backend) CrossEntropy(logits tensor.Buf, width int, ids, targets []int) []float64 {
	l := host(logits)
	ce := make([]float64, len(ids))
	b.wk.For(len(ids), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := l[ids[i]*width : (ids[i]+1)*width]
			ce[i] = LogSumExp(row) - float64(row[targets[i]])
		}
	})
	return ce
}

func (*Backend) Argmax(x tensor.Buf, rows, width int) []int {
	xh := host(x)
	out := make([]int, rows)
	for r := range out {
		row := xh[r*width : (r+1)*width]
		for i, v := range row {
			if v > row[out[r]] {
				out[r] = i
			}
		}
	}
	return out
}

// kvCache is the CPU backend's KVCache: per layer, one buffer per
// (sequence, kv head) in the packed layout attend reads (kvHeadLen), so
// attending never repacks the keys.
type kvCache struct {
	seqs, capacity, hd int
	kvHeads, layers    int
	kLen, vLen         int // floats per (sequence, kv head)
	k, v               [][]float32
}

func (c *kvCache) Capacity() int { return c.capacity }

func (*Backend) NewKVCache(seqs, kvHeads, capacity, hd, layers int) tensor.KVCache {
	c := &kvCache{seqs: seqs, capacity: capacity, hd: hd, kvHeads: kvHeads, layers: layers}
	c.kLen, c.vLen = kvHeadLen(capacity, hd)
	for range layers {
		c.k = append(c.k, make([]float32, seqs*kvHeads*c.kLen))
		c.v = append(c.v, make([]float32, seqs*kvHeads*c.vLen))
	}
	return c
}

// Attention splits the work over (sequence, kv head) pairs, one per task.
// A task attends each of the rep query heads that share its kv head in
// turn, reading the queries and writing the outputs where they lie: a
// head's rows are its positions, heads·hd floats apart, so each group of
// four rows sees about the same number of keys and attend skips the keys
// the causal mask hides. A single new token (decoding) has one row per
// head: there the rep heads, hd floats apart, are the rows instead.
func (b *Backend) Attention(out, q, k, v tensor.Buf, cache tensor.KVCache, layer int, a tensor.AttentionArgs) {
	c, ok := cache.(*kvCache)
	if !ok {
		panic(fmt.Sprintf("cpu: CPU backend given a %T cache", cache))
	}
	outh, qh, kh, vh := host(out), host(q), host(k), host(v)
	hd, kvh, heads, tn := a.HeadDim, a.KVHeads, a.Heads, a.Tokens
	// Check everything before the workers start, so that a caller's mistake
	// is one clear message rather than an index panic inside a worker.
	switch {
	case hd != c.hd || kvh != c.kvHeads || kvh <= 0 || heads%kvh != 0:
		panic(fmt.Sprintf("cpu: Attention: %d heads, %d kv heads of width %d; the cache holds %d kv heads of width %d", heads, kvh, hd, c.kvHeads, c.hd))
	case a.Seqs < 0 || a.Seqs > c.seqs || layer < 0 || layer >= c.layers:
		panic(fmt.Sprintf("cpu: Attention: %d sequences at layer %d; the cache holds %d sequences in %d layers", a.Seqs, layer, c.seqs, c.layers))
	case a.Start < 0 || tn < 0 || a.Start+tn > c.capacity:
		panic(fmt.Sprintf("cpu: Attention: slots [%d, %d) outside the capacity %d", a.Start, a.Start+tn, c.capacity))
	case len(a.Mask) < a.Seqs*c.capacity:
		panic(fmt.Sprintf("cpu: Attention: mask of %d entries, want %d sequences × %d slots", len(a.Mask), a.Seqs, c.capacity))
	case len(qh) < a.Seqs*tn*heads*hd || len(outh) < len(qh) || len(kh) < a.Seqs*tn*kvh*hd || len(vh) < len(kh):
		panic(fmt.Sprintf("cpu: Attention: q/out/k/v of %d/%d/%d/%d floats are too short", len(qh), len(outh), len(kh), len(vh)))
	}
	if tn == 0 {
		return
	}
	rep := heads / kvh
	kc, vc := c.k[layer], c.v[layer]
	// The query rows' cache slots: a head's new tokens, or (decoding) the
	// rep heads at the one new slot.
	slots := make([]int, tn)
	for t := range slots {
		slots[t] = a.Start + t
	}
	if tn == 1 {
		slots = slices.Repeat(slots, rep)
	}
	b.wk.Tasks(a.Seqs*kvh, func(task int) {
		seq, g := task/kvh, task%kvh
		kt, vt := kc[task*c.kLen:(task+1)*c.kLen], vc[task*c.vLen:(task+1)*c.vLen]
		src := (seq*tn*kvh + g) * hd // the sequence's first new token's key
		storeKV(kt, vt, c.capacity, hd, a.Start, tn, kh[src:], vh[src:], kvh*hd)
		keyOK := a.Mask[seq*c.capacity : (seq+1)*c.capacity]
		first := (seq*tn*heads + g*rep) * hd // head g·rep at the sequence's first new token
		if tn == 1 {
			attend(outh[first:], hd, qh[first:], hd, slots, kt, vt, c.capacity, hd, keyOK, a.Window, a.Scale)
			return
		}
		for j := range rep {
			h := first + j*hd
			attend(outh[h:], heads*hd, qh[h:], heads*hd, slots, kt, vt, c.capacity, hd, keyOK, a.Window, a.Scale)
		}
	})
}
