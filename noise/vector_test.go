package noise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// paths is every path this build and CPU can run, the scalar one (nil)
// last, so that each test checks all of them on the same machine.
func paths() []*vecKernels { return append(vectorPaths(), nil) }

func pathName(k *vecKernels) string {
	if k == nil {
		return "scalar"
	}
	return k.name
}

// withPath runs f with the vector path k (nil: the scalar path) in use.
func withPath(k *vecKernels, f func()) {
	old := vecPath
	vecPath = k
	defer func() { vecPath = old }()
	f()
}

// guard is the value the fill tests put around a range, to see that
// nothing outside it is written.
var guard = math.Float32frombits(0x7fc0dead)

// fillGuarded returns FillRange's elements [lo, lo+n) under path k, and
// fails the test if anything around them in the slice changed.
func fillGuarded(t *testing.T, k *vecKernels, s Stream, lo, n int, dist Dist, norm float64) []float32 {
	t.Helper()
	const pad = 40
	buf := make([]float32, n+2*pad)
	for i := range buf {
		buf[i] = guard
	}
	withPath(k, func() { s.FillRange(buf[pad:pad+n], lo, dist, norm) })
	for i, v := range buf {
		if (i < pad || i >= pad+n) && math.Float32bits(v) != math.Float32bits(guard) {
			t.Fatalf("%s %v [%d, +%d): wrote %v at %d outside the range", pathName(k), dist, lo, n, v, i-pad)
		}
	}
	return buf[pad : pad+n]
}

var testStreams = []Stream{
	{Seed: StreamSeed(42, 0), Step: 3},
	{},
	{Seed: ^uint64(0), Step: ^uint32(0), Dir: ^uint32(0)},
	{Seed: 0x0123456789abcdef, Step: 9999, Dir: 3},
}

// TestVectorPathsMatchScalar: every path gives the scalar path's bits for
// every distribution (Sphere with a norm), over long ranges and ragged
// ones, below and above block 2³² and across it (both counter words), for
// several streams.
func TestVectorPathsMatchScalar(t *testing.T) {
	ranges := [][2]int{{0, 4096}, {3, 1000}, {1, 1}, {2, 2}, {5, 17}, {4, 16}, {6, 33}, {1 << 22, 77},
		{0, 130}, {1, 150}, {3, 157}, {2, 321}, {0, 160}, {0, 320}, // the last steps of 4 and 5 groups
		{1<<34 - 1001, 2000}, {1<<34 - 5, 10}, {1<<34 + 2, 30}, {1<<42 + 3, 4099}, {1<<62 + 1, 64}}
	for _, k := range vectorPaths() {
		for _, s := range testStreams {
			for _, r := range ranges {
				for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
					got := fillGuarded(t, k, s, r[0], r[1], dist, 1234.5678)
					want := fillGuarded(t, nil, s, r[0], r[1], dist, 1234.5678)
					if i := firstDiff(want, got); i >= 0 {
						t.Fatalf("%s %+v %v element %d: %v (%08x), scalar %v (%08x)", k.name, s, dist, r[0]+i,
							got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestVectorPathsRagged: every start 0-8 and length 0-100 (the kernels'
// masked first and last stores, and their last steps of 1-3 groups or a
// half), every
// distribution and the raw words, against the scalar path.
func TestVectorPathsRagged(t *testing.T) {
	s := Stream{Seed: StreamSeed(9, 1), Step: 4, Dir: 2}
	for _, k := range vectorPaths() {
		for lo := range 9 {
			for n := range 101 {
				for _, dist := range []Dist{Normal, Rademacher, Ternary} {
					got := fillGuarded(t, k, s, lo, n, dist, 1)
					want := fillGuarded(t, nil, s, lo, n, dist, 1)
					if i := firstDiff(want, got); i >= 0 {
						t.Fatalf("%s %v [%d, +%d) element %d: %v, scalar %v", k.name, dist, lo, n, lo+i, got[i], want[i])
					}
				}
				got := make([]uint32, n)
				withPath(k, func() { s.FillBits(got, lo) })
				want := make([]uint32, n)
				withPath(nil, func() { s.FillBits(want, lo) })
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s FillBits [%d, +%d) element %d: %08x, scalar %08x", k.name, lo, n, lo+i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestFillBitsArePhilox: on every path, FillBits gives element i word i mod 4
// of Philox4x32 of counter (i/4 mod 2³², i/4 >> 32, step, dir) under the
// seed's halves, across block 2³².
func TestFillBitsArePhilox(t *testing.T) {
	s := Stream{Seed: 0xfeedface12345678, Step: 77, Dir: 5}
	for _, k := range paths() {
		for _, lo := range []int{0, 3, 1<<34 - 130} {
			got := make([]uint32, 301)
			withPath(k, func() { s.FillBits(got, lo) })
			for j, w := range got {
				i := uint64(lo + j)
				x := Philox4x32([4]uint32{uint32(i / 4), uint32(i / 4 >> 32), s.Step, s.Dir}, [2]uint32{uint32(s.Seed), uint32(s.Seed >> 32)})
				if w != x[i%4] {
					t.Fatalf("%s: element %d = %08x, want %08x", pathName(k), i, w, x[i%4])
				}
			}
		}
	}
}

// TestFillPathsAgree: Fill (parallel, the sphere norm included) gives the
// same vector on every path.
func TestFillPathsAgree(t *testing.T) {
	const n = 2*ChunkSize + 37
	s := Stream{Seed: StreamSeed(1, 4), Step: 2, Dir: 1}
	for _, dist := range []Dist{Normal, Sphere, Rademacher, Ternary} {
		want := make([]float32, n)
		withPath(nil, func() { Fill(want, dist, s, 2) })
		for _, k := range vectorPaths() {
			got := make([]float32, n)
			withPath(k, func() { Fill(got, dist, s, 2) })
			if i := firstDiff(want, got); i >= 0 {
				t.Errorf("%s %v: element %d = %v, scalar %v", k.name, dist, i, got[i], want[i])
			}
		}
	}
}

// wordSteps lays out blocks' words as a path's word transforms read them
// (vecKernels.words), with random junk in the high dwords, which the
// kernels must ignore.
func wordSteps(k *vecKernels, blocks [][4]uint32, r *rand.Rand) []uint64 {
	nl := len(k.lanes)
	out := make([]uint64, 0, 4*len(blocks))
	for s := 0; s < len(blocks); s += nl {
		for m := range 4 {
			for _, b := range k.lanes {
				out = append(out, uint64(r.Uint32())<<32|uint64(blocks[s+b][m]))
			}
		}
	}
	return out
}

// checkWords runs each path's transform of dist on blocks (a multiple of 32)
// and compares it with the scalar definition (blockValues' arithmetic).
func checkWords(t *testing.T, ks []*vecKernels, dist Dist, blocks [][4]uint32, r *rand.Rand) {
	want := make([]float32, 4*len(blocks))
	for j, x := range blocks {
		if dist == Normal {
			v := normals4(x)
			copy(want[4*j:], v[:])
			continue
		}
		for m := range 4 {
			want[4*j+m] = float32(int(x[m]%3) - 1)
		}
	}
	got := make([]float32, 4*len(blocks))
	for _, k := range ks {
		words := wordSteps(k, blocks, r)
		k.words[dist](&got[0], &words[0], len(blocks)/len(k.lanes))
		if i := firstDiff(want, got); i >= 0 {
			t.Errorf("%s %v of words %08x: element %d = %v (%08x), want %v (%08x)", k.name, dist, blocks[i/4], i%4,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestNormalsEveryWord: each path's Box–Muller gives the scalar bits for
// every one of the 2²⁴ radii (a>>8) and 2²⁶ angles (b>>6) the words can
// encode, the discarded low bits random (with -short, every 37th angle).
// The angles are split among goroutines.
func TestNormalsEveryWord(t *testing.T) {
	ks := vectorPaths()
	if len(ks) == 0 {
		t.Skip("no vector path on this build and CPU")
	}
	stride := uint32(1)
	if testing.Short() {
		stride = 37
	}
	const half = 1 << 25 // block c has the angles c and c + 2²⁵
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			const batch = 1 << 12 // blocks, a multiple of every path's step
			blocks := make([][4]uint32, 0, batch)
			for c := uint32(w) * stride; c < half; c += uint32(workers) * stride {
				blocks = append(blocks, [4]uint32{c<<8 | r.Uint32()>>24, c<<6 | r.Uint32()>>26,
					(c*0x9E3779B1)<<8 | r.Uint32()>>24, (c+half)<<6 | r.Uint32()>>26})
				if len(blocks) == batch || c+uint32(workers)*stride >= half {
					for len(blocks)%32 != 0 {
						blocks = append(blocks, [4]uint32{})
					}
					checkWords(t, ks, Normal, blocks, r)
					blocks = blocks[:0]
				}
			}
		})
	}
	wg.Wait()
}

// TestTernaryWords: each path's ternary transform on the words around the
// multiples of 3 where its compares change (x = 0x55555555 and 0xAAAAAAAA
// and their neighbours give p at the thresholds), the extremes, and random
// words.
func TestTernaryWords(t *testing.T) {
	var ws []uint32
	for _, c := range []uint32{0, 1, 2, 3, 0x55555555, 0xAAAAAAAA, 0x7FFFFFFF, 0xFFFFFFFF, 0xAAAAAAAB} {
		for d := uint32(0); d < 8; d++ {
			ws = append(ws, c+d-4)
		}
	}
	// The words whose p = x·3⁻¹ mod 2³² is at or next to a threshold.
	for _, p := range []uint32{0x55555554, 0x55555555, 0x55555556, 0x55555557, 0xAAAAAAA9, 0xAAAAAAAA, 0xAAAAAAAB, 0xAAAAAAAC} {
		ws = append(ws, p*3)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for len(ws) < 1<<16 {
		ws = append(ws, r.Uint32())
	}
	var blocks [][4]uint32
	for i := 0; i+4 <= len(ws); i += 4 {
		blocks = append(blocks, [4]uint32{ws[i], ws[i+1], ws[i+2], ws[i+3]})
	}
	checkWords(t, vectorPaths(), Ternary, blocks, r)
}

func TestRunLen(t *testing.T) {
	tests := []struct{ lo, n, want int }{
		{0, 10, 10}, {1<<34 - 4, 10, 4}, {1 << 34, 10, 10}, {3<<34 - 1, 5, 1}, {1<<34 - 4, 4, 4},
	}
	for _, tt := range tests {
		if got := runLen(tt.lo, tt.n); got != tt.want {
			t.Errorf("runLen(%d, %d) = %d, want %d", tt.lo, tt.n, got, tt.want)
		}
	}
}

// TestKernelArgsLayout: kernelArgs' fields lie where the assembly reads
// them (noise_amd64.h's A_ names).
func TestKernelArgsLayout(t *testing.T) {
	h, err := os.ReadFile("noise_amd64.h")
	if err != nil {
		t.Fatal(err)
	}
	var a kernelArgs
	want := map[string]uintptr{
		"A_CTR": unsafe.Offsetof(a.ctr), "A_D0": unsafe.Offsetof(a.d0), "A_E1": unsafe.Offsetof(a.e1),
		"A_E2": unsafe.Offsetof(a.e2), "A_E3": unsafe.Offsetof(a.e3), "A_K02": unsafe.Offsetof(a.k02),
		"A_KEY0(3)": unsafe.Offsetof(a.keys), "A_KEY1(3)": unsafe.Offsetof(a.keys) + 4,
	}
	def := regexp.MustCompile(`(?m)^#define (A_\w+)(\(r\))? \(?([0-9]+)`)
	found := 0
	for _, m := range def.FindAllStringSubmatch(string(h), -1) {
		name := m[1]
		if m[2] != "" {
			name += "(3)" // A_KEYn(r) is (base+8*(r-3))(SI): base at round 3
		}
		off, ok := want[name]
		if !ok {
			t.Errorf("noise_amd64.h defines %s, which kernelArgs lacks", name)
			continue
		}
		if fmt.Sprint(off) != m[3] {
			t.Errorf("%s is at %s in noise_amd64.h, at %d in kernelArgs", name, m[3], off)
		}
		found++
	}
	if found != len(want) {
		t.Errorf("noise_amd64.h defines %d of kernelArgs' %d fields", found, len(want))
	}
}

// BenchmarkFillPaths: FillRange on one thread per path, for a long range
// and for runs the length of short weight rows, aligned and not. It
// reports the process's CPU time per value (cpu-ns/value), which on a
// shared machine is the figure to read, besides the wall time.
func BenchmarkFillPaths(b *testing.B) {
	runs := []struct{ n, skip int }{{1 << 14, 0}, {128, 0}, {64, 0}, {64, 1}}
	for _, k := range paths() {
		for _, dist := range []Dist{Normal, Rademacher} {
			for _, r := range runs {
				z := make([]float32, r.n)
				b.Run(fmt.Sprintf("%s/%v/n=%d+%d", pathName(k), dist, r.n, r.skip), func(b *testing.B) {
					cpu0, ok := cpuTime()
					withPath(k, func() {
						for i := 0; b.Loop(); i++ {
							Stream{Seed: 1, Step: uint32(i)}.FillRange(z, 4*i+r.skip, dist, 1)
						}
					})
					values := float64(b.N) * float64(r.n)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/values, "ns/value")
					if cpu1, _ := cpuTime(); ok {
						b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/values, "cpu-ns/value")
					}
				})
			}
		}
	}
}
