package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestF32ToBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above half
		{0x3f807fff, 0x3f80}, // below half
		{0xbf80c000, 0xbf81}, // negative
		{0x7f7fffff, 0x7f80}, // max float rounds to +Inf
		{0x7f800000, 0x7f80}, // +Inf
		{0x7f800001, 0x7fc0}, // NaN stays NaN
	} {
		if got := f32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("f32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

// TestPackBF16 checks the bf16 panels against Pack of the rounded weights:
// same products in the same order, so the same bits, on every path.
func TestPackBF16(t *testing.T) {
	wk := Workers(0)
	withPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, s := range [][3]int{{1, 1, 1}, {5, 33, 65}, {33, 70, 600}, {130, 64, 1030}} {
			m, n, k := s[0], s[1], s[2]
			a, b := randMat(r, m*k), randMat(r, n*k)
			rounded := make([]float32, len(b))
			for i, v := range b {
				rounded[i] = bf16ToF32(f32ToBF16(v))
			}
			p16 := PackBF16(b, n, k)
			if !p16.IsBF16() {
				t.Fatal("PackBF16 result does not report IsBF16")
			}
			want := make([]float32, m*n)
			MatMulPacked(wk, want, a, m, Pack(wk, rounded, n, k))
			for _, th := range []int{1, 2, 3} {
				wk = Workers(th)
				got := make([]float32, m*n)
				MatMulPacked(wk, got, a, m, p16)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d threads=%d: c[%d] = %v, want %v", m, n, k, th, i, got[i], want[i])
					}
				}
			}
			row := make([]float32, k)
			for _, j := range []int{0, n / 2, n - 1} {
				p16.Row(row, j)
				for kk := range k {
					if row[kk] != rounded[j*k+kk] {
						t.Fatalf("n=%d k=%d: Row(%d)[%d] = %v, want %v", n, k, j, kk, row[kk], rounded[j*k+kk])
					}
				}
			}
		}
	})
}

// TestGEMMConcurrentCallers: calls from several goroutines at once share the
// worker pool without interfering (run with -race).
func TestGEMMConcurrentCallers(t *testing.T) {
	wk := Workers(0)
	wk = Workers(2)
	r := rand.New(rand.NewPCG(11, 12))
	m, n, k := 40, 300, 300
	a, b := randMat(r, m*k), randMat(r, n*k)
	w := Pack(wk, b, n, k)
	want := make([]float32, m*n)
	MatMulPacked(wk, want, a, m, w)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			c := make([]float32, m*n)
			for range 5 {
				MatMulPacked(wk, c, a, m, w)
				for i := range c {
					if c[i] != want[i] {
						errs <- fmt.Errorf("c[%d] = %v, want %v", i, c[i], want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
