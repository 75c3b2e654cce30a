package cpu

// The GEMM of full-parameter ZO: y = x·(W + s·εZ)ᵀ for the rows of each
// variant, W the packed weight and Z the noise regenerated from its seed.
// Nothing the size of W is made: a panel's slice of W + s·εZ is formed in a
// small per-worker scratch while the panel is read, every row of the
// segments that read it so sweeps past it, and it is dropped. The noise of
// a slice is drawn once for both signs of a direction (the + and −
// variants of a step are consecutive segments). The kernels and their
// summation order are the packed GEMM's, so a row's result is what MatMul
// gives on W + s·εZ packed.

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/meazo-go/meazo/tensor"
)

// perturbedValues is what a worker forms at once, for each sign: a K
// slice of W + s·εZ of taskPanels adjacent panels (and of W − s·εZ beside it
// for a mirrored pair), 1 MiB of float32 each; a group of fewer panels (a
// task of a narrow weight) takes deeper slices in the same room. A block of
// rows then sweeps every panel of the group before the next block, as the
// plain GEMM's tiles do, so that the rows' values are read back from the
// cache once per group of panels: sweeping all the rows past one panel
// before the next read them from memory once per panel (the + and − rows
// of Qwen3-0.6B's products at 16×64 tokens are 8-24 MiB), which on a Zen 3
// made the pair's products much longer than the plain ones over the same
// rows (docs/ALGORITHMS.md has the figures; 2048 deep was no faster, 512
// slower).
// A tile adds a whole slice before the next, so the output is read and
// written once per slice.
const perturbedValues = 1024 * taskPanels * nr

// sliceDepth is the depth of the slices of a group of panels panels wide: a
// multiple of kcBlock, so that a slice ends where a block of the plain
// GEMM's K ends and the sums are rounded where MatMul rounds them (a group
// of 3, 5, 6 or 7 panels has room for 2730, 1638, 1365 or 1170: its last
// block would run past the slice and add K columns twice).
func sliceDepth(k, panels int) int {
	d := perturbedValues / (panels * nr)
	return min(k, d-d%kcBlock)
}

// noiseDepth is the depth of noise drawn at once: 32×1024 float32, 128 KiB,
// so that the noise is still in L1/L2 when W ± εZ is formed from it.
const noiseDepth = 1024

// segment is a row range [lo, hi) of a perturbed GEMM and how it reads W;
// mirrored: another segment reads W − scale·z of the same noise (the −
// variant of a + one), so that both are formed in one pass.
type segment struct {
	lo, hi   int
	p        *tensor.Perturbation
	mirrored bool
}

// segmentsOf turns the backend's segments into row ranges over m rows.
func segmentsOf(segs []tensor.Segment, m int) []segment {
	out := make([]segment, 0, len(segs))
	lo := 0
	for _, s := range segs {
		if s.Rows < 0 {
			panic(fmt.Sprintf("cpu: segment of %d rows", s.Rows))
		}
		out = append(out, segment{lo: lo, hi: lo + s.Rows, p: s.P})
		lo += s.Rows
	}
	for i := range out {
		for j := range out {
			if pi, pj := out[i].p, out[j].p; pi != nil && pj != nil && pi.Noise == pj.Noise && pi.Scale == -pj.Scale && pi.Scale != 0 {
				out[i].mirrored = true
			}
		}
	}
	if lo != m {
		panic(fmt.Sprintf("cpu: segments cover %d rows of %d", lo, m))
	}
	return out
}

// panelScratch is a worker's perturbed slices of a group of panels:
// W + scale·z, and with a mirrored segment W − scale·z (in mirror, formed
// in the same pass), each panel's slice after the previous one's; and room
// for noiseDepth rows of noise at a time.
type panelScratch struct {
	z, w, mirror []float32
	key          panelKey // the slices and noise mirror was formed for
	mirrorScale  float64  // mirror holds W + mirrorScale·z; 0: nothing
}

// panelKey names the noise of the slices of a group of panels of the
// weight a task multiplies by.
type panelKey struct {
	noise    tensor.Noise
	p0, p1   int
	kLo, kHi int
}

var panelScratches = sync.Pool{New: func() any {
	return &panelScratch{z: make([]float32, noiseDepth*nr), w: make([]float32, perturbedValues), mirror: make([]float32, perturbedValues)}
}}

// MatMulPackedPerturbed computes y[m][N] = x[m][K] · Wᵀ with the rows of
// each segment reading W as its perturbation makes it.
func MatMulPackedPerturbed(wk Workers, y, x []float32, m int, w *Packed, segs []tensor.Segment) {
	checkLen("MatMulPackedPerturbed", y, m*w.N, x, m*w.K)
	sg := segmentsOf(segs, m)
	if m == 0 || w.N == 0 {
		return
	}
	if w.K == 0 {
		clear(y[:m*w.N])
		return
	}
	j := jobs.Get().(*gemmJob)
	j.c, j.a, j.b, j.b16, j.m, j.n, j.k = y, x, w.data, w.data16, m, w.N, w.K
	path := currentPath()
	tiles := path.tilesInUse()
	j.kern, j.kern16, j.tall, j.exact = path.kern, path.kern16, tiles.tall, tiles.exact
	// Tasks are whole groups of panels over every row: a panel's noise is
	// drawn by one worker only.
	th := wk.n()
	if 2*m*w.N*w.K < serialFlops {
		th = 1
	}
	np := panels(w.N)
	j.taskPanels = max(1, min(taskPanels, np/(4*th)))
	j.nTaskN = (np + j.taskPanels - 1) / j.taskPanels
	j.mTask, j.nTask = m, j.nTaskN
	Workers(min(th, j.nTask)).Tasks(j.nTask, func(t int) {
		var tmp [mr * nr]float32
		sc := panelScratches.Get().(*panelScratch)
		sc.mirrorScale = 0
		p0 := t * j.taskPanels
		j.perturbedPanels(w, sg, p0, min(np, p0+j.taskPanels), sc, &tmp)
		panelScratches.Put(sc)
	})
	j.c, j.a, j.b, j.b16, j.kern, j.kern16, j.tall, j.exact = nil, nil, nil, nil, nil, nil, nil, nil
	jobs.Put(j)
}

// perturbedPanels computes the columns of panels [p0, p1) of every row, K
// slice by K slice: for each segment, each block of its rows against every
// panel of the group as the segment reads it. While the rows sweep past a
// slice, the group's next slice of W is fetched from memory a share at each
// block of rows, so that forming it waits for nothing but its noise. (The
// first slice of the group a worker takes next is not: it cannot know which
// until it takes it, and claiming it ahead measured no faster on a Zen 3.)
func (j *gemmJob) perturbedPanels(w *Packed, sg []segment, p0, p1 int, sc *panelScratch, tmp *[mr * nr]float32) {
	blocks := 0
	for _, s := range sg {
		blocks += (s.hi - s.lo + mcBlock - 1) / mcBlock
	}
	var pds [taskPanels]panelData
	group := pds[:p1-p0]
	depth := sliceDepth(j.k, len(group))
	for kLo := 0; kLo < j.k; kLo += depth {
		kHi := min(j.k, kLo+depth)
		next := nextSlices(w, p0, p1, kHi, depth, blocks)
		for _, s := range sg {
			if s.p != nil {
				sc.perturbed(w, p0, kLo, kHi, s.p, s.mirrored, group)
			} else {
				for i := range group {
					group[i] = panelData{j.b, j.b16, (p0 + i) * j.k * nr}
				}
			}
			for r0 := s.lo; r0 < s.hi; r0 += mcBlock {
				next.fetch()
				for i, pd := range group {
					j.panelTiles(pd, p0+i, r0, min(s.hi, r0+mcBlock), kLo, kHi, tmp)
				}
			}
		}
	}
}

// prefetcher fetches a list of byte ranges a share at a time.
type prefetcher struct {
	ranges [taskPanels][]byte
	n      int // ranges left: ranges[:n]
	share  int // bytes a call
}

// nextSlices returns the prefetcher of the slices [kLo, kLo+depth) of
// panels [p0, p1) of W (none from kLo = K), in blocks shares.
func nextSlices(w *Packed, p0, p1, kLo, depth, blocks int) prefetcher {
	var f prefetcher
	if kLo >= w.K {
		return f
	}
	total := 0
	for p := p1 - 1; p >= p0; p-- { // fetch ranges from the end of the list: the first panel first
		lo, hi := (p*w.K+kLo)*nr, (p*w.K+min(w.K, kLo+depth))*nr
		if w.data16 != nil {
			f.ranges[f.n] = unsafe.Slice((*byte)(unsafe.Pointer(&w.data16[lo])), 2*(hi-lo))
		} else {
			f.ranges[f.n] = unsafe.Slice((*byte)(unsafe.Pointer(&w.data[lo])), 4*(hi-lo))
		}
		total += len(f.ranges[f.n])
		f.n++
	}
	f.share = (total + blocks - 1) / blocks
	return f
}

// fetch asks for the next share of the ranges.
func (f *prefetcher) fetch() {
	for left := f.share; left > 0 && f.n > 0; {
		r := &f.ranges[f.n-1]
		n := min(left, len(*r))
		prefetchL2(unsafe.Pointer(&(*r)[0]), n)
		*r = (*r)[n:]
		left -= n
		if len(*r) == 0 {
			f.n--
		}
	}
}

// perturbed forms the slices [kLo, kHi) of the panels of group (p0 on) of
// W as pt makes them, in the scratch, and sets group to where they are;
// with mirrored, W − scale·z too, for the segment that reads it next (then
// set without any work). The noise is drawn noiseDepth deep at a time.
func (sc *panelScratch) perturbed(w *Packed, p0, kLo, kHi int, pt *tensor.Perturbation, mirrored bool, group []panelData) {
	key := panelKey{pt.Noise, p0, p0 + len(group), kLo, kHi}
	stride := (kHi - kLo) * nr
	if sc.mirrorScale != 0 && sc.key == key && pt.Scale == sc.mirrorScale {
		for i := range group {
			group[i] = panelData{b: sc.mirror, base: i*stride - kLo*nr}
		}
		return
	}
	sc.key, sc.mirrorScale = key, 0
	for i := range group {
		sc.formPanel(w, p0+i, kLo, kHi, pt, mirrored, i*stride)
		group[i] = panelData{b: sc.w, base: i*stride - kLo*nr}
	}
	if mirrored {
		sc.mirrorScale = -pt.Scale
	}
}

// formPanel forms the slice [kLo, kHi) of panel p at off in the scratch.
func (sc *panelScratch) formPanel(w *Packed, p, kLo, kHi int, pt *tensor.Perturbation, mirrored bool, off int) {
	cols := min(nr, w.N-p*nr)
	for k0 := kLo; k0 < kHi; k0 += noiseDepth {
		kc := min(kHi, k0+noiseDepth) - k0
		// The noise of the panel's rows (each a contiguous run of the
		// stream), drawn in the panel's layout.
		z := sc.z[:kc*nr]
		pt.Stream.FillPanel(z, int(pt.Offset)+p*nr*w.K+k0, w.K, cols, kc, nr, pt.Dist, pt.Norm)
		src, d := (p*w.K+k0)*nr, off+(k0-kLo)*nr
		dst := sc.w[d : d+kc*nr]
		switch {
		case mirrored && w.data16 != nil:
			perturbPairBF16(dst, sc.mirror[d:d+kc*nr], w.data16[src:src+kc*nr], z, pt.Scale)
		case mirrored:
			perturbPair(dst, sc.mirror[d:d+kc*nr], w.data[src:src+kc*nr], z, pt.Scale)
		case w.data16 != nil:
			perturbValuesBF16(dst, w.data16[src:src+kc*nr], z, pt.Scale)
		default:
			perturbValues(dst, w.data[src:src+kc*nr], z, pt.Scale)
		}
	}
}
