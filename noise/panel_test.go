package noise

import (
	"fmt"
	"math"
	"testing"
)

// TestFillPanel: on every path, FillPanel's panel holds FillRange's values
// of each row, bit for bit, by depth, zeros in the columns past rows, and
// nothing past kc·width is written — for the vector kernel's shapes (32
// rows, aligned) and the general path's (ragged rows, unaligned starts and
// strides, width other than 32), below, at and across block 2³², for every
// distribution.
func TestFillPanel(t *testing.T) {
	type shape struct{ lo, stride, rows, kc, width int }
	shapes := []shape{
		{0, 1024, 32, 1024, 32}, {4096, 64, 32, 64, 32}, {8, 4, 32, 4, 32}, {12, 3072, 32, 1024, 32},
		{0, 1024, 32, 256, 32}, {1<<34 - 4096, 128, 32, 128, 32}, {1<<34 - 64, 8, 32, 8, 32}, // the last block before the high word moves, and across it
		{1<<42 + 4, 16, 32, 16, 32},
		{0, 1024, 7, 1024, 32}, {2, 1024, 32, 64, 32}, {0, 18, 32, 16, 32}, {0, 64, 32, 6, 32}, {5, 40, 9, 33, 16}, {0, 0, 32, 8, 32},
		{3, 700, 5, 300, 13}, {7, 700, 30, 520, 32}, // a last group of fewer than 8 rows; depths past the general path's 256
	}
	for _, k := range paths() {
		for _, s := range testStreams[:2] {
			for _, sh := range shapes {
				for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
					name := fmt.Sprintf("%s %+v %v %+v", pathName(k), s, dist, sh)
					const pad = 16
					buf := make([]float32, sh.kc*sh.width+pad)
					for i := range buf {
						buf[i] = guard
					}
					withPath(k, func() { s.FillPanel(buf, sh.lo, sh.stride, sh.rows, sh.kc, sh.width, dist, 1234.5678) })
					// The kernel must have drawn what it is for, not left it
					// to the general path.
					aligned := sh.rows == 32 && sh.width == 32 && sh.lo%4 == 0 && sh.stride%4 == 0 && sh.kc%4 == 0 && sh.lo>>34 == (sh.lo+31*sh.stride+sh.kc-1)>>34
					if k != nil && (dist == Normal || dist == Sphere) && aligned {
						var used bool
						withPath(k, func() { used = s.fillPanelVector(make([]float32, sh.kc*32), sh.lo, sh.stride, 32, sh.kc, 32, dist) })
						if !used {
							t.Fatalf("%s: the %s panel kernel did not run", name, k.name)
						}
					}
					row := make([]float32, sh.kc)
					for r := range sh.width {
						if r < sh.rows {
							withPath(nil, func() { s.FillRange(row, sh.lo+r*sh.stride, dist, 1234.5678) })
						} else {
							clear(row)
						}
						for kk, want := range row {
							if got := buf[kk*sh.width+r]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s: row %d depth %d: %v (%08x), want %v (%08x)", name, r, kk, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					}
					for i, v := range buf[sh.kc*sh.width:] {
						if math.Float32bits(v) != math.Float32bits(guard) {
							t.Fatalf("%s: wrote %v at %d past the panel", name, v, i)
						}
					}
				}
			}
		}
	}
}

// BenchmarkFillPanel draws a 32×1024 panel of normals (what the CPU GEMM's
// perturbed panel draws at once) directly, against FillRange row by row (which
// then still needs a transpose).
func BenchmarkFillPanel(b *testing.B) {
	s := testStreams[0]
	dst := make([]float32, 1024*PanelRows)
	b.Run("panel", func(b *testing.B) {
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			s.FillPanel(dst, 0, 1024, PanelRows, 1024, PanelRows, Normal, 1)
		}
	})
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(4 * len(dst)))
		for b.Loop() {
			for r := range PanelRows {
				s.FillRange(dst[r*1024:(r+1)*1024], r*1024, Normal, 1)
			}
		}
	})
}
