package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refAttend is attend in float64 from unpacked keys and values [slot][hd].
func refAttend(q []float32, qpos []int, k, v []float32, hd int, keyOK []int, window int, scale float64) []float64 {
	out := make([]float64, len(qpos)*hd)
	for r, qp := range qpos {
		var w []float64
		var keys []int
		maxv := math.Inf(-1)
		for j := 0; j <= qp; j++ {
			if keyOK[j] != 1 || (window > 0 && qp-j >= window) {
				continue
			}
			var s float64
			for d := range hd {
				s += float64(q[r*hd+d]) * float64(k[j*hd+d])
			}
			s *= scale
			w, keys = append(w, s), append(keys, j)
			maxv = math.Max(maxv, s)
		}
		var sum float64
		for i := range w {
			w[i] = math.Exp(w[i] - maxv)
			sum += w[i]
		}
		for i, j := range keys {
			for d := range hd {
				out[r*hd+d] += w[i] / sum * float64(v[j*hd+d])
			}
		}
	}
	return out
}

func TestAttend(t *testing.T) {
	cases := []struct {
		capacity, hd, rows, window int
		pad                        bool
	}{
		{1, 32, 1, 0, false},
		{7, 40, 5, 0, true},
		{33, 64, 9, 0, false},
		{100, 128, 37, 0, true},
		{130, 96, 130, 17, true},
		{600, 32, 11, 0, false}, // p·v over more than one kcBlock of keys
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("cap%d_hd%d_rows%d_win%d", c.capacity, c.hd, c.rows, c.window), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.capacity), uint64(c.hd)))
			k, v := randMat(r, c.capacity*c.hd), randMat(r, c.capacity*c.hd)
			keyOK := make([]int, c.capacity)
			for j := range keyOK {
				keyOK[j] = 1
				if c.pad && r.IntN(4) == 0 {
					keyOK[j] = 0
				}
			}
			kLen, vLen := kvHeadLen(c.capacity, c.hd)
			kc, vc := make([]float32, kLen), make([]float32, vLen)
			storeKV(kc, vc, c.capacity, c.hd, 0, c.capacity, k, v, c.hd)
			q := randMat(r, c.rows*c.hd)
			qpos := make([]int, c.rows)
			for i := range qpos {
				qpos[i] = r.IntN(c.capacity)
			}
			scale := 1 / math.Sqrt(float64(c.hd))
			out := make([]float32, c.rows*c.hd)
			attend(out, c.hd, q, c.hd, qpos, kc, vc, c.capacity, c.hd, keyOK, c.window, float32(scale))
			want := refAttend(q, qpos, k, v, c.hd, keyOK, c.window, scale)
			for i, w := range want {
				if d := math.Abs(float64(out[i]) - w); d > 2e-5*(1+math.Abs(w)) {
					t.Fatalf("out[%d][%d] = %v, want %v", i/c.hd, i%c.hd, out[i], w)
				}
			}
			// Each row alone gives the same bits as in the batch.
			for i := range qpos {
				one := make([]float32, c.hd)
				attend(one, c.hd, q[i*c.hd:(i+1)*c.hd], c.hd, qpos[i:i+1], kc, vc, c.capacity, c.hd, keyOK, c.window, float32(scale))
				for d := range one {
					if math.Float32bits(one[d]) != math.Float32bits(out[i*c.hd+d]) {
						t.Fatalf("row %d alone: [%d] = %v, in the batch %v", i, d, one[d], out[i*c.hd+d])
					}
				}
			}
			// Rows read and written in place in wider rows (a head's rows in
			// a [tokens][heads·hd] activation) give the same bits, and the
			// columns between them stay as they were.
			const skip = 3 * 32
			ld := c.hd + skip
			qw, outw := make([]float32, c.rows*ld), make([]float32, c.rows*ld)
			for i := range qpos {
				copy(qw[i*ld:], q[i*c.hd:(i+1)*c.hd])
			}
			for i := range outw {
				outw[i] = float32(i)
			}
			attend(outw, ld, qw, ld, qpos, kc, vc, c.capacity, c.hd, keyOK, c.window, float32(scale))
			for i := range outw {
				r, col := i/ld, i%ld
				if col < c.hd && math.Float32bits(outw[i]) != math.Float32bits(out[r*c.hd+col]) {
					t.Fatalf("row %d in wider rows: [%d] = %v, contiguous %v", r, col, outw[i], out[r*c.hd+col])
				}
				if col >= c.hd && outw[i] != float32(i) {
					t.Fatalf("row %d in wider rows: column %d past the head was written (%v)", r, col, outw[i])
				}
			}
		})
	}
}

// TestAttendChecksExtent: q and out too short for their rows and strides are
// a clear panic before any kernel reaches past them.
func TestAttendChecksExtent(t *testing.T) {
	const capacity, hd, rows = 8, 32, 5
	kLen, vLen := kvHeadLen(capacity, hd)
	kc, vc := make([]float32, kLen), make([]float32, vLen)
	keyOK := make([]int, capacity)
	for i := range keyOK {
		keyOK[i] = 1
	}
	qpos := []int{0, 1, 2, 3, 4}
	cases := []struct {
		name                   string
		outLen, ldo, qLen, ldq int
	}{
		{"out short", rows*hd - 1, hd, rows * hd, hd},
		{"out short for its stride", rows * hd, 2 * hd, rows * hd, hd},
		{"stride below hd", rows * hd, hd - 1, rows * hd, hd},
		{"q short for its stride", rows * hd, hd, rows * hd, 2 * hd},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "cpu.attend:") {
					t.Errorf("recovered %v, want attend's panic", r)
				}
			}()
			attend(make([]float32, c.outLen), c.ldo, make([]float32, c.qLen), c.ldq, qpos, kc, vc, capacity, hd, keyOK, 0, 1)
		})
	}
}

// TestStoreKV: runs of slots stored at any start, across panel boundaries,
// from rows ld floats apart, land where kvHeadLen's layout puts them (key
// panels [slot/32][d][slot%32], value panels [d/32][slot][d%32]) and leave
// every other float as it was.
func TestStoreKV(t *testing.T) {
	cases := []struct {
		capacity, hd, ld int
		runs             [][2]int // [slot, n]
	}{
		{1, 32, 32, [][2]int{{0, 1}}},
		{64, 128, 1024, [][2]int{{0, 64}}},                          // a prefill, Qwen3-0.6B's kv heads
		{100, 40, 40, [][2]int{{0, 7}, {7, 30}, {37, 1}, {38, 62}}}, // hd not a multiple of 32
		{70, 64, 96, [][2]int{{5, 60}, {65, 0}, {65, 5}}},
		{40, 96, 200, [][2]int{{31, 2}, {0, 31}, {33, 1}, {34, 1}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("cap%d_hd%d_ld%d", c.capacity, c.hd, c.ld), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.capacity), uint64(c.ld)))
			kLen, vLen := kvHeadLen(c.capacity, c.hd)
			kc, vc := randMat(r, kLen), randMat(r, vLen)
			wantK, wantV := slices.Clone(kc), slices.Clone(vc)
			panelLen := panels(c.capacity) * nr * nr
			for _, run := range c.runs {
				slot, n := run[0], run[1]
				k, v := randMat(r, max(0, (n-1)*c.ld+c.hd)), randMat(r, max(0, (n-1)*c.ld+c.hd))
				storeKV(kc, vc, c.capacity, c.hd, slot, n, k, v, c.ld)
				for i := range n {
					s := slot + i
					for d := range c.hd {
						wantK[(s/nr)*c.hd*nr+d*nr+s%nr] = k[i*c.ld+d]
						wantV[(d/nr)*panelLen+s*nr+d%nr] = v[i*c.ld+d]
					}
				}
			}
			for i := range wantK {
				if kc[i] != wantK[i] {
					t.Fatalf("key cache [%d] = %v, want %v", i, kc[i], wantK[i])
				}
			}
			for i := range wantV {
				if vc[i] != wantV[i] {
					t.Fatalf("value cache [%d] = %v, want %v", i, vc[i], wantV[i])
				}
			}
		})
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "cpu.storeKV:") {
			t.Errorf("recovered %v, want storeKV's panic", r)
		}
	}()
	kLen, vLen := kvHeadLen(8, 32)
	storeKV(make([]float32, kLen), make([]float32, vLen), 8, 32, 0, 2, make([]float32, 64), make([]float32, 63), 32)
}

// BenchmarkStoreKV stores one head's keys and values of a 16×64 prefill of
// Qwen3-0.6B (64 slots of 128, rows 8 kv heads apart), as the attention of
// a full-parameter step does 28·8·32 times.
func BenchmarkStoreKV(b *testing.B) {
	const capacity, hd, ld = 64, 128, 8 * 128
	kLen, vLen := kvHeadLen(capacity, hd)
	kc, vc := make([]float32, kLen), make([]float32, vLen)
	r := rand.New(rand.NewPCG(1, 1))
	k, v := randMat(r, capacity*ld), randMat(r, capacity*ld)
	b.SetBytes(2 * 4 * capacity * hd)
	for b.Loop() {
		storeKV(kc, vc, capacity, hd, 0, capacity, k, v, ld)
	}
}
