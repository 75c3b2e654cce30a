package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTallKernelsMatchFourRows: every tall kernel of every path gives, for
// each of its rows, the bits of the path's 4×32 kernel (unrolled loops and
// tails, with and without accumulation; float32 and bfloat16 panels), and
// writes nothing outside its tile.
func TestTallKernelsMatchFourRows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const lda, ldc = 700, 40
	// check runs a tall kernel (tall) and, row by row in a scratch tile, the
	// 4-row kernel (four), from the same C, and compares all of C.
	check := func(what string, start []float32, four func(row int, c *float32), tall func(c *float32)) {
		rows := (len(start) - ldc) / ldc
		want, got := append([]float32(nil), start...), append([]float32(nil), start...)
		for i := range rows {
			var tile [mr * nr]float32
			copy(tile[:nr], want[i*ldc:])
			four(i, &tile[0])
			copy(want[i*ldc:i*ldc+nr], tile[:nr])
		}
		tall(&got[0])
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("%s: c[%d] = %v, 4-row kernel %v", what, i, got[i], want[i])
			}
		}
	}
	for _, p := range availablePaths() {
		for _, tk := range p.tall {
			for _, kc := range []int{0, 1, 3, 4, 5, 8, 17, 512} {
				a, b := randMat(r, tk.rows*lda), randMat(r, max(kc, 1)*nr)
				b16 := make([]uint16, max(kc, 1)*nr)
				for i := range b16 {
					b16[i] = f32ToBF16(float32(r.NormFloat64()))
				}
				for _, acc := range []bool{false, true} {
					start := randMat(r, (tk.rows+1)*ldc)
					what := fmt.Sprintf("%s %d-row kernel, kc=%d acc=%v", p.name, tk.rows, kc, acc)
					check(what, start,
						func(i int, c *float32) { p.kern(&a[i*lda], lda, 1, &b[0], c, nr, kc, acc) },
						func(c *float32) { tk.kern(&a[0], lda, &b[0], c, ldc, kc, acc) })
					if tk.kern16 != nil {
						check(what+" bf16", start,
							func(i int, c *float32) { p.kern16(&a[i*lda], lda, 1, &b16[0], c, nr, kc, acc) },
							func(c *float32) { tk.kern16(&a[0], lda, &b16[0], c, ldc, kc, acc) })
					}
				}
			}
		}
	}
}

// TestGEMMSameBitsEveryTile: the tile height changes no bit of any GEMM
// (float32 and bfloat16 panels, edge rows and columns, several K slices and
// super-blocks, every worker count), so calibration can never change results.
func TestGEMMSameBitsEveryTile(t *testing.T) {
	defer SetGEMMTile(0)
	defer func() { kSuper = defaultKSuper }()
	withPaths(t, func(t *testing.T) {
		heights := []int{mr}
		for _, tk := range currentPath().tall {
			heights = append(heights, tk.rows)
		}
		if len(heights) == 1 {
			t.Skip("this path has only the 4×32 tile")
		}
		r := rand.New(rand.NewPCG(23, 24))
		for _, s := range [][3]int{{1, 64, 40}, {8, 96, 600}, {12, 64, 33}, {23, 70, 1100}, {67, 300, 520}, {261, 64, 1537}} {
			m, n, k := s[0], s[1], s[2]
			a, b := randMat(r, m*k), randMat(r, n*k)
			for _, w := range []*Packed{Pack(Workers(1), b, n, k), PackBF16(b, n, k)} {
				var want []float32
				for _, h := range heights {
					for _, depth := range []int{defaultKSuper, kcBlock} {
						for _, th := range []int{1, 3} {
							if err := SetGEMMTile(h); err != nil {
								t.Fatal(err)
							}
							kSuper = depth
							c := make([]float32, m*n)
							MatMulPacked(Workers(th), c, a, m, w)
							if want == nil {
								want = c
								continue
							}
							for i := range c {
								if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
									t.Fatalf("m=%d n=%d k=%d bf16=%v: tile %d rows, super-block %d, %d threads: c[%d] = %v, 4-row tile %v", m, n, k, w.IsBF16(), h, depth, th, i, c[i], want[i])
								}
							}
						}
					}
				}
				kSuper = defaultKSuper
			}
		}
	})
}

// TestGEMMTileChoice: a fixed height is used and said; an impossible one is
// refused; calibration picks one of the path's heights and says how fast
// each was.
func TestGEMMTileChoice(t *testing.T) {
	defer SetGEMMTile(0)
	withPaths(t, func(t *testing.T) {
		if err := SetGEMMTile(5); err == nil {
			t.Fatal("SetGEMMTile(5) succeeded")
		} else if want := fmt.Sprintf("GEMM path %s: its heights are [4", currentPath().name); !strings.Contains(err.Error(), want) {
			t.Errorf("SetGEMMTile(5): %v; want the path's heights (%q)", err, want)
		}
		if err := SetGEMMTile(mr); err != nil {
			t.Fatal(err)
		}
		if got := currentPath().tallInUse(); len(got) != 0 {
			t.Fatalf("height 4: %d tall kernels in use", len(got))
		}
		if err := SetGEMMTile(0); err != nil {
			t.Fatal(err)
		}
		desc := GEMMTile()
		if len(currentPath().tall) == 0 {
			if desc != "4×32" {
				t.Fatalf("GEMMTile() = %q on a path without tall tiles", desc)
			}
			return
		}
		if !strings.Contains(desc, "calibrated") || !strings.Contains(desc, "4 rows") {
			t.Fatalf("GEMMTile() = %q, want the calibration's rates", desc)
		}
		for _, tk := range currentPath().tall {
			if err := SetGEMMTile(tk.rows); err != nil {
				t.Fatal(err)
			}
			if got := currentPath().tallInUse(); len(got) == 0 || got[0].rows != tk.rows {
				t.Fatalf("height %d: tallest in use %v", tk.rows, got)
			}
		}
	})
}

// TestRowTiles checks how a sweep of rows is cut into tiles: the tallest
// tile that fits, except where the rows split exactly into the heights in
// use and the tallest would break that (no tile then runs on rows past the
// end), with and without bfloat16 variants of the tall kernels.
func TestRowTiles(t *testing.T) {
	kern := func(*float32, int, *float32, *float32, int, int, bool) {}
	kern16 := func(*float32, int, *uint16, *float32, int, int, bool) {}
	avx2 := []tallKernel{{rows: 6, kern: kern, kern16: kern16}}
	avx512 := []tallKernel{{rows: 12, kern: kern, kern16: kern16}, {rows: 8, kern: kern, kern16: kern16}}
	no16 := []tallKernel{{rows: 6, kern: kern}}
	for _, c := range []struct {
		name string
		tall []tallKernel
		b16  bool
		rows int
		want []int // tile heights in order; 4 covers a ragged tail too
	}{
		{"avx2 8 rows: two 4-row tiles", avx2, false, 8, []int{4, 4}},
		{"avx2 10", avx2, false, 10, []int{6, 4}},
		{"avx2 12", avx2, false, 12, []int{6, 6}},
		{"avx2 14", avx2, false, 14, []int{6, 4, 4}},
		{"avx2 128", avx2, false, 128, append(slices.Repeat([]int{6}, 20), 4, 4)},
		{"avx2 7: ragged either way, tallest first", avx2, false, 7, []int{6, 4}},
		{"avx2 2", avx2, false, 2, []int{4}},
		{"avx2 bf16 8", avx2, true, 8, []int{4, 4}},
		{"no bf16 kernel: 4-row tiles", no16, true, 12, []int{4, 4, 4}},
		{"avx512 8", avx512, false, 8, []int{8}},
		{"avx512 20", avx512, false, 20, []int{12, 8}},
		{"avx512 14", avx512, false, 14, []int{12, 4}},
		{"avx512 28", avx512, false, 28, []int{12, 12, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTileState(c.tall, "")
			j := &gemmJob{tall: s.tall, exact: s.exact}
			var got []int
			for left := c.rows; left > 0; {
				h := mr
				if tk := j.tallTile(left, nr, c.b16); tk != nil {
					h = tk.rows
				}
				got = append(got, h)
				left -= h
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%d rows: tiles %v, want %v", c.rows, got, c.want)
			}
		})
	}
}
