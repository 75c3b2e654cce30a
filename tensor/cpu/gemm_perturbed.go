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

// kSuperPerturbed is the depth of the K slices a perturbed panel is formed
// for, the plain GEMM's super-block: up to 32×4096 float32, 512 KiB of
// W + εZ and as much of W − εZ per worker. A tile adds a whole slice before
// the next tile, so the output is read and written once per slice: at 1024,
// what it was, the products with K = 2048 to 8192 (Llama's, Qwen3's
// down_proj) took 3-9 % longer (BenchmarkMatMulPerturbed, the newer Xeon).
// (The order of the K slices a tile adds does not depend on it.)
const kSuperPerturbed = defaultKSuper

// noiseDepth is the depth of noise drawn at once: 32×1024 float32, 128 KiB,
// a quarter of a slice, so that the noise is still in L1/L2 when W ± εZ is
// formed from it and a worker's scratch stays at 1.125 MiB.
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

// panelScratch is a worker's perturbed panel slice: W + scale·z, and with
// a mirrored segment W − scale·z (in mirror, formed in the same pass), and
// room for noiseDepth rows of noise at a time.
type panelScratch struct {
	z, w, mirror []float32
	key          panelKey // the slice and noise mirror was formed for
	mirrorScale  float64  // mirror holds W + mirrorScale·z; 0: nothing
}

// panelKey names the noise of a panel slice of the weight a task
// multiplies by.
type panelKey struct {
	noise       tensor.Noise
	p, kLo, kHi int
}

var panelScratches = sync.Pool{New: func() any {
	n := kSuperPerturbed * nr
	return &panelScratch{z: make([]float32, noiseDepth*nr), w: make([]float32, n), mirror: make([]float32, n)}
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
	// Tasks are whole panels over every row: a panel's noise is drawn by
	// one worker only.
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
		for p := p0; p < min(np, p0+j.taskPanels); p++ {
			j.perturbedPanel(w, sg, p, min(np, p0+j.taskPanels), sc, &tmp)
		}
		panelScratches.Put(sc)
	})
	j.c, j.a, j.b, j.b16, j.kern, j.kern16, j.tall, j.exact = nil, nil, nil, nil, nil, nil, nil, nil
	jobs.Put(j)
}

// perturbedPanel computes panel p's columns of every row, K slice by K
// slice, each segment's rows against the panel as it reads it. While the
// rows sweep past a slice, the next slice of W (this panel's, or the next
// panel's first) is fetched from memory a share at each block of rows, so
// that forming it waits for nothing but its noise.
func (j *gemmJob) perturbedPanel(w *Packed, sg []segment, p, pEnd int, sc *panelScratch, tmp *[mr * nr]float32) {
	blocks := 0
	for _, s := range sg {
		blocks += (s.hi - s.lo + mcBlock - 1) / mcBlock
	}
	for kLo := 0; kLo < j.k; kLo += kSuperPerturbed {
		kHi := min(j.k, kLo+kSuperPerturbed)
		next := nextSlice(w, p, pEnd, kHi)
		share := (len(next) + blocks - 1) / blocks
		for _, s := range sg {
			pd := panelData{j.b, j.b16, p * j.k * nr}
			if s.p != nil {
				pd = sc.perturbed(w, p, kLo, kHi, s.p, s.mirrored)
			}
			for r0 := s.lo; r0 < s.hi; r0 += mcBlock {
				if n := min(share, len(next)); n > 0 {
					prefetchL2(unsafe.Pointer(&next[0]), n)
					next = next[n:]
				}
				j.panelTiles(pd, p, r0, min(s.hi, r0+mcBlock), kLo, kHi, tmp)
			}
		}
	}
}

// nextSlice is the bytes of W a task forms after the slice of panel p
// ending at kHi: the panel's next slice, or the next panel's first (none
// past pEnd).
func nextSlice(w *Packed, p, pEnd, kHi int) []byte {
	lo, hi := (p*w.K+kHi)*nr, (p*w.K+min(w.K, kHi+kSuperPerturbed))*nr
	if kHi == w.K {
		if p+1 >= pEnd {
			return nil
		}
		lo, hi = (p+1)*w.K*nr, ((p+1)*w.K+min(w.K, kSuperPerturbed))*nr
	}
	if w.data16 != nil {
		return unsafe.Slice((*byte)(unsafe.Pointer(&w.data16[lo])), 2*(hi-lo))
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w.data[lo])), 4*(hi-lo))
}

// perturbed forms the slice [kLo, kHi) of panel p of W as pt makes it, in
// the scratch, and returns where it is; with mirrored, W − scale·z too, for
// the segment that reads it next (then returned without any work). The
// noise is drawn noiseDepth deep at a time.
func (sc *panelScratch) perturbed(w *Packed, p, kLo, kHi int, pt *tensor.Perturbation, mirrored bool) panelData {
	key := panelKey{pt.Noise, p, kLo, kHi}
	if sc.mirrorScale != 0 && sc.key == key && pt.Scale == sc.mirrorScale {
		return panelData{b: sc.mirror, base: -kLo * nr}
	}
	sc.key, sc.mirrorScale = key, 0
	cols := min(nr, w.N-p*nr)
	for k0 := kLo; k0 < kHi; k0 += noiseDepth {
		kc := min(kHi, k0+noiseDepth) - k0
		// The noise of the panel's rows (each a contiguous run of the
		// stream), drawn in the panel's layout.
		z := sc.z[:kc*nr]
		pt.Stream.FillPanel(z, int(pt.Offset)+p*nr*w.K+k0, w.K, cols, kc, nr, pt.Dist, pt.Norm)
		src, d := (p*w.K+k0)*nr, (k0-kLo)*nr
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
	if mirrored {
		sc.mirrorScale = -pt.Scale
	}
	return panelData{b: sc.w, base: -kLo * nr}
}

// toPanel writes rows [cols][kc] (row col of a panel, along K) into dst in
// a panel's layout [kc][nr], zero in the columns past cols: the noise of a
// panel is drawn row by row, as the stream runs, and read by columns. The
// values are moved, never computed on, so float32 goes as its bits
// (toPanelBits: an 8×8 transpose in registers where the CPU has AVX-512).
func toPanel[T float32 | uint32](dst, rows []T, cols, kc int) {
	toPanelBits(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)),
		unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(rows))), len(rows)), cols, kc)
}

// toPanelBits is toPanel on 32-bit words.
var toPanelBits = toPanelScalar

// toPanelScalar moves eight rows at a time, so that every write fills part
// of one cache line and the reads run along eight rows; from column c0 on,
// and from depth k0 on for the columns before c0 (what a vector version
// left).
func toPanelScalar(dst, rows []uint32, cols, kc int) { toPanelFrom(dst, rows, cols, kc, 0, 0) }

func toPanelFrom(dst, rows []uint32, cols, kc, c0, k0 int) {
	if k0 < kc {
		for c := 0; c < c0; c += 8 {
			for kk := k0; kk < kc; kk++ {
				d := dst[kk*nr+c : kk*nr+c+8]
				for i := range d {
					d[i] = rows[(c+i)*kc+kk]
				}
			}
		}
	}
	for ; c0 < nr; c0 += 8 {
		if c0+8 > cols {
			for kk := range kc {
				for c := c0; c < c0+8; c++ {
					var v uint32
					if c < cols {
						v = rows[c*kc+kk]
					}
					dst[kk*nr+c] = v
				}
			}
			continue
		}
		r0, r1, r2, r3 := rows[c0*kc:(c0+1)*kc], rows[(c0+1)*kc:(c0+2)*kc], rows[(c0+2)*kc:(c0+3)*kc], rows[(c0+3)*kc:(c0+4)*kc]
		r4, r5, r6, r7 := rows[(c0+4)*kc:(c0+5)*kc], rows[(c0+5)*kc:(c0+6)*kc], rows[(c0+6)*kc:(c0+7)*kc], rows[(c0+7)*kc:(c0+8)*kc]
		for kk := range kc {
			d := dst[kk*nr+c0 : kk*nr+c0+8]
			d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = r0[kk], r1[kk], r2[kk], r3[kk], r4[kk], r5[kk], r6[kk], r7[kk]
		}
	}
}
