package cpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tile height. The 4×32 micro kernel keeps 8 accumulators and reads a panel
// vector for every 4 rows. That is enough on a CPU with one 512-bit FMA pipe
// per core (Zen 4: it reached ~90 % of peak), but a CPU with two pipes of
// latency 4 (Zen 5) needs at least 8 FMAs in flight at all times and twice
// the panel bandwidth, and the 4-row tile leaves it at 70-75 %. A path may
// therefore carry taller kernels (8×32 and 12×32 with AVX-512, 6×32 with
// AVX2, float32 and bfloat16 panels) that compute every element
// with the same chain of fused multiply-adds — the same bits — and the GEMM
// uses them for the rows that come in whole groups.
//
// Which height is fastest depends on the CPU, so it is measured: the first
// GEMM on a path times each height on a small problem that stays in L2
// (about a millisecond, on the calling goroutine) and keeps the fastest
// (the tallest of those within 2 % of it).
// Because every height gives the same bits, the choice changes speed only,
// never results. SetGEMMTile (tensor.Options.GEMMTile) fixes the height
// instead (4, 8 or 12 on avx512; 4 or 6 on avx2).

// tileChoice is a path's chosen tall kernels: chosen once, replaced only by
// SetGEMMTile.
type tileChoice struct {
	once sync.Once
	cur  atomic.Pointer[tileState]
}

// tileState is one choice of tall kernels.
type tileState struct {
	tall []tallKernel // tallest first; empty: the 4×32 kernel only
	desc string       // e.g. "12×32 (calibrated, 1 thread: 4 rows 170, 8 rows 199, 12 rows 205 GFLOP/s)"
	// exact[b][r]: r rows split exactly into tiles of the heights in use
	// (mr and those of tall that have a kernel for float32 panels, b = 0,
	// or for bfloat16 ones, b = 1), so that no tile runs on rows past the
	// end (see gemmJob.tallTile).
	exact *[2][mcBlock + 1]bool
}

// newTileState returns the state for the tall kernels tall.
func newTileState(tall []tallKernel, desc string) *tileState {
	s := &tileState{tall: tall, desc: desc, exact: new([2][mcBlock + 1]bool)}
	for b := range 2 {
		e := &s.exact[b]
		e[0] = true
		for r := 1; r <= mcBlock; r++ {
			e[r] = r >= mr && e[r-mr]
			for _, t := range tall {
				if (b == 0 || t.kern16 != nil) && r >= t.rows && e[r-t.rows] {
					e[r] = true
				}
			}
		}
	}
	return s
}

// tilesInUse returns the tile state of this path, choosing the tall kernels
// on first use.
func (p *gemmPath) tilesInUse() *tileState {
	p.tile.once.Do(func() { p.tile.cur.Store(p.chooseTile(0)) })
	return p.tile.cur.Load()
}

// tallInUse returns the tall kernels the GEMM uses on this path, tallest
// first, choosing them on first use.
func (p *gemmPath) tallInUse() []tallKernel {
	if t := p.tilesInUse(); t != nil {
		return t.tall
	}
	return nil
}

// chooseTile returns the path's tall kernels no taller than limit, or the
// fastest set by calibration when limit is 0.
func (p *gemmPath) chooseTile(limit int) *tileState {
	if len(p.tall) == 0 {
		return newTileState(nil, "4×32")
	}
	if limit > 0 {
		tall := tallUpTo(p.tall, limit)
		return newTileState(tall, fmt.Sprintf("%d×32 (fixed at %d)", tileHeight(tall), limit))
	}
	heights := []int{mr}
	for i := len(p.tall) - 1; i >= 0; i-- {
		heights = append(heights, p.tall[i].rows)
	}
	rates := calibrateTiles(p, heights)
	// The tallest height within 2 % of the fastest: in a whole GEMM a
	// taller tile also reads fewer panel bytes per flop, which the small
	// calibration problem does not show (on Zen 5 the 8- and 12-row kernels
	// calibrate alike, and the 12-row GEMM was 2-7 % faster; docs/PERFORMANCE.md).
	top := slices.Max(rates)
	best := 0
	for i := range heights {
		if rates[i] >= 0.98*top {
			best = i
		}
	}
	parts := make([]string, len(heights))
	for i, h := range heights {
		parts[i] = fmt.Sprintf("%d rows %.0f", h, rates[i])
	}
	return newTileState(tallUpTo(p.tall, heights[best]),
		fmt.Sprintf("%d×32 (calibrated, 1 thread: %s GFLOP/s)", heights[best], strings.Join(parts, ", ")))
}

// tallUpTo returns the kernels of tall (tallest first) no taller than max.
func tallUpTo(tall []tallKernel, max int) []tallKernel {
	for i := range tall {
		if tall[i].rows <= max {
			return tall[i:]
		}
	}
	return nil
}

func tileHeight(tall []tallKernel) int {
	if len(tall) == 0 {
		return mr
	}
	return tall[0].rows
}

// calibrateTiles returns, for each tile height, the best GFLOP/s of the
// path's kernels over a 48-row × 4-panel × kc=512 problem (A 96 KiB read,
// the panels 256 KiB: within the L2 of any AVX-512 CPU), best of 7 rounds
// with the heights interleaved so that a busy moment slows them alike.
func calibrateTiles(p *gemmPath, heights []int) []float64 {
	const rows, np, kc = 48, 4, kcBlock
	// Rows 8 KiB apart, as in the models' products (every K of Llama and
	// Qwen3 is a multiple of 1024 floats): A rows that map to the same L1
	// set are part of what a tile height must cope with.
	const lda = 2048
	a := make([]float32, rows*lda)
	b := make([]float32, np*kc*nr)
	c := make([]float32, rows*np*nr)
	for i := range a {
		a[i] = float32(i%7) * 0.25
	}
	for i := range b {
		b[i] = float32(i%5) * 0.5
	}
	best := make([]float64, len(heights))
	for range 7 {
		for hi, h := range heights {
			tall := tallUpTo(p.tall, h)
			start := time.Now()
			for q := range np {
				for i := 0; i < rows; {
					cp := &c[i*np*nr+q*nr]
					if len(tall) > 0 && h > mr {
						t := tall[0]
						t.kern(&a[i*lda], lda, &b[q*kc*nr], cp, np*nr, kc, false)
						i += t.rows
						continue
					}
					p.kern(&a[i*lda], lda, mr, &b[q*kc*nr], cp, np*nr, kc, false)
					i += mr
				}
			}
			if s := time.Since(start).Seconds(); s > 0 {
				best[hi] = max(best[hi], 2*rows*np*nr*kc/s/1e9)
			}
		}
	}
	return best
}

// GEMMTile describes the tile the current path uses and how it was chosen,
// calibrating first if that has not happened yet.
func GEMMTile() string {
	p := currentPath()
	p.tallInUse()
	if t := p.tile.cur.Load(); t != nil {
		return t.desc
	}
	return "4×32"
}

// SetGEMMTile fixes the tallest tile of the current path (4, 6, 8 or 12 rows;
// 0: calibrate now), for benchmarks and tests; every height gives the same
// bits. Calls already running keep their tiles.
func SetGEMMTile(rows int) error {
	p := currentPath()
	heights := []int{mr}
	for _, t := range p.tall {
		heights = append(heights, t.rows)
	}
	if rows != 0 && !slices.Contains(heights, rows) {
		slices.Sort(heights)
		return fmt.Errorf("tile height %d not available on GEMM path %s: its heights are %v rows", rows, p.name, heights)
	}
	p.tile.once.Do(func() {}) // a later first use must not choose again
	p.tile.cur.Store(p.chooseTile(rows))
	return nil
}
