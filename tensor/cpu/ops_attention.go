package cpu

import (
	"fmt"
	"math"
	"sync"
)

// Causal attention over a key/value cache stored in the GEMM's packed panel
// layout, so that attending needs no repacking: the keys of one head are the
// packed right-hand side of q·kᵀ (one panel per 32 cache slots), the values
// that of p·v (one panel per 32 head dimensions, each running over all
// slots). The micro kernel computes only the 4-row tiles × key panels a
// causal query can see, on the calling goroutine, so callers parallelise over
// heads and every row's result is independent of the thread count and of
// the other rows.

// kvHeadLen returns the lengths of one head's key and value cache buffers
// for capacity slots of hd-dimensional vectors (zeroed when allocated).
func kvHeadLen(capacity, hd int) (kLen, vLen int) {
	return panels(capacity) * hd * nr, panels(hd) * panels(capacity) * nr * nr
}

// storeKV writes the keys and values of the n consecutive cache slots from
// slot on into one head's key and value buffers (see kvHeadLen): the key of
// slot+t is k[t·ld:][:hd], its value v[t·ld:][:hd] (a head's rows in a
// [tokens][kv heads·hd] activation). A key panel holds one dimension of its
// 32 slots side by side, so a run that fills a whole panel is transposed
// into it, a cache line at a time (toPanel); a slot at a time writes one
// float into each of hd lines, which in a forward's cache were seldom still
// in L1 from one slot to the next. The other slots (decoding, a run's
// partial panels) go a slot at a time.
func storeKV(kc, vc []float32, capacity, hd, slot, n int, k, v []float32, ld int) {
	if slot < 0 || n < 0 || slot+n > capacity {
		panic(fmt.Sprintf("cpu.storeKV: slots [%d, %d) outside the capacity %d", slot, slot+n, capacity))
	}
	if n == 0 {
		return
	}
	if last := (n-1)*ld + hd; len(k) < last || len(v) < last || ld < hd {
		panic(fmt.Sprintf("cpu.storeKV: %d slots of %d: k of %d floats, v of %d (rows %d apart)", n, hd, len(k), len(v), ld))
	}
	for lo := slot; lo < slot+n; {
		hi := min(slot+n, (lo/nr+1)*nr)
		kp, src := kc[(lo/nr)*hd*nr:(lo/nr+1)*hd*nr], k[(lo-slot)*ld:]
		if hi-lo == nr {
			toPanel(kp, src, nr, hd, ld)
		} else {
			for t := range hi - lo {
				for d, x := range src[t*ld : t*ld+hd] {
					kp[d*nr+lo%nr+t] = x
				}
			}
		}
		lo = hi
	}
	panelLen := panels(capacity) * nr * nr
	for t := range n {
		vt := v[t*ld : t*ld+hd]
		for p := range panels(hd) {
			cols := min(nr, hd-p*nr)
			off := p*panelLen + (slot+t)*nr
			copy(vc[off:off+cols], vt[p*nr:p*nr+cols])
		}
	}
}

// attend computes softmax(scale·q·kᵀ)·v for len(qpos) query vectors of
// width hd against one head's cache (storeKV): row r reads q[r·ldq:][:hd]
// and writes out[r·ldo:][:hd], so the caller's q and out need no copying
// whatever their layout. Row r sits at cache slot qpos[r] and sees the keys
// j ≤ qpos[r] with keyOK[j] == 1 and, if window > 0, qpos[r]-j < window;
// the others get probability exactly 0 (HF's additive mask, up to float32
// underflow). A row that sees no key gets zeros. Rows are taken four at a
// time, each tile scored against the keys its last row sees, so rows in
// ascending qpos make the work track the causal triangle; a row's result
// does not depend on which rows share its tile (the keys past its own get
// probability 0 and add exact zeros). The softmax is SoftmaxRow's.
func attend(out []float32, ldo int, q []float32, ldq int, qpos []int, kc, vc []float32, capacity, hd int, keyOK []int, window int, scale float32) {
	rows := len(qpos)
	if rows == 0 {
		return
	}
	// The kernels reach q and out through pointers: check their extent here.
	if last := rows - 1; len(q) < last*ldq+hd || len(out) < last*ldo+hd || ldq < hd || ldo < hd {
		panic(fmt.Sprintf("cpu.attend: %d rows of %d: q of %d floats (rows %d apart), out of %d (rows %d apart)", rows, hd, len(q), ldq, len(out), ldo))
	}
	ld := panels(capacity) * nr // scores row stride = value panel height
	hdPad := panels(hd) * nr
	buf := getAttnScratch(mr * (ld + hdPad))
	defer attnScratch.Put(buf)
	scores, o := (*buf)[:mr*ld], (*buf)[mr*ld:]
	kern := currentPath().kern
	negInf := float32(math.Inf(-1))
	// Keys before the first masked slot are all visible to a query that is
	// not windowed off them: its row needs only the scaling.
	open := 0
	for open < capacity && keyOK[open] == 1 {
		open++
	}
	for i := 0; i < rows; i += mr {
		n := min(mr, rows-i)
		lim := 0 // keys this tile can see
		for _, p := range qpos[i : i+n] {
			if p < 0 || p >= capacity {
				panic(fmt.Sprintf("cpu.attend: query slot %d outside the capacity %d", p, capacity))
			}
			lim = max(lim, p+1)
		}
		for p := range panels(lim) {
			for k0 := 0; k0 < hd; k0 += kcBlock {
				kern(&q[i*ldq+k0], ldq, n, &kc[p*hd*nr+k0*nr], &scores[p*nr], ld, min(kcBlock, hd-k0), k0 > 0)
			}
		}
		for r := range n {
			qp := qpos[i+r]
			row := scores[r*ld : r*ld+lim]
			if qp < open && (window <= 0 || qp < window) {
				scaleBy(row[:qp+1], scale)
			} else {
				for j := range row[:qp+1] {
					if keyOK[j] == 1 && (window <= 0 || qp-j < window) {
						row[j] *= scale
					} else {
						row[j] = negInf
					}
				}
			}
			softmaxMasked(row[:qp+1])
			clear(row[qp+1:])
		}
		// A whole tile whose width is whole panels is written in place; the
		// kernel writes four rows of 32 columns, so the others go through o.
		direct := n == mr && hd%nr == 0
		for p := range panels(hd) {
			dst, ldc := &o[p*nr], hdPad
			if direct {
				dst, ldc = &out[i*ldo+p*nr], ldo
			}
			for k0 := 0; k0 < lim; k0 += kcBlock {
				kern(&scores[k0], ld, n, &vc[p*ld*nr+k0*nr], dst, ldc, min(kcBlock, lim-k0), k0 > 0)
			}
		}
		if !direct {
			for r := range n {
				copy(out[(i+r)*ldo:(i+r)*ldo+hd], o[r*hdPad:r*hdPad+hd])
			}
		}
	}
}

var attnScratch sync.Pool

func getAttnScratch(n int) *[]float32 {
	if v, ok := attnScratch.Get().(*[]float32); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]float32, n)
	return &s
}
