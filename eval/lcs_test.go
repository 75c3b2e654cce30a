package eval

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tableLength is the LCS length from the full table (the reference).
func tableLength(a, b []int32) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestLinearLCSMatchesTable compares the bit-parallel length and the
// divide-and-conquer backtrack with the full table on random sequences;
// small alphabets make many ties, where the backtrack's choice matters.
func TestLinearLCSMatchesTable(t *testing.T) {
	defer func(c int) { lcsTableCells = c }(lcsTableCells)
	lcsTableCells = 0
	rng := rand.New(rand.NewPCG(14, 1))
	for _, tc := range []struct {
		alphabet, maxLen, trials int
	}{{1, 70, 50}, {2, 200, 300}, {3, 150, 300}, {5, 300, 200}, {50, 400, 100}, {4, 1500, 6}} {
		t.Run(fmt.Sprintf("alphabet %d", tc.alphabet), func(t *testing.T) {
			for trial := range tc.trials {
				seq := func() []int32 {
					s := make([]int32, rng.IntN(tc.maxLen+1))
					for i := range s {
						s[i] = int32(rng.IntN(tc.alphabet))
					}
					return s
				}
				a, b := seq(), seq()
				if got, want := lcsLength(a, b), tableLength(a, b); got != want {
					t.Fatalf("trial %d (%d x %d): length %d, want %d", trial, len(a), len(b), got, want)
				}
				want := backtrackTable(a, b)
				slices.Reverse(want)
				if got := lcsIndices(a, b); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("trial %d (%d x %d): indices %v, want %v", trial, len(a), len(b), got, want)
				}
			}
		})
	}
}

// TestRougeFixturesLinearPath runs the rouge_score fixtures with every LCS
// through the linear-memory path.
func TestRougeFixturesLinearPath(t *testing.T) {
	defer func(c int) { lcsTableCells = c }(lcsTableCells)
	lcsTableCells = 0
	TestRougeFixtures(t)
}

// rougeText makes n bytes of word salad over a Zipf-like vocabulary, with a
// line break every lineWords words (0: one line).
func rougeText(seed uint64, n, lineWords int) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x", i*7919%65536)
	}
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	var b strings.Builder
	for w := 1; b.Len() < n; w++ {
		b.WriteString(vocab[z.Uint64()])
		if lineWords > 0 && w%lineWords == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// TestRougeMemory scores a 120 KB prediction against a 120 KB reference and
// measures the memory: rouge_score's full tables would need 4 bytes × 21,000²
// ≈ 1.8 GB here, seven times the bound checked (the old code took 3.2 GB for
// one 223 KB line). 500 KB texts (32 GB of tables) took 20 s of the suite to
// show the same.
func TestRougeMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("scores two 120 KB texts")
	}
	for _, tc := range []struct {
		name      string
		lineWords int
	}{{"one line", 0}, {"lines of 2000 words", 2000}} {
		t.Run(tc.name, func(t *testing.T) {
			ref, pred := rougeText(1, 120_000, tc.lineWords), rougeText(2, 120_000, tc.lineWords)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // sample the live heap while scoring
				defer close(done)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > peak.Load() {
						peak.Store(ms.HeapAlloc)
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			t0 := time.Now()
			s, err := Rouge(ref, pred, false)
			secs := time.Since(t0).Seconds()
			close(stop)
			<-done
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			total := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d/%d tokens: %.1f s, allocated in all %.1f MB, peak live heap %.1f MB (sampled; %.1f MB before); rougeL %.4f rougeLsum %.4f",
				len(RougeTokenize(ref, false)), len(RougeTokenize(pred, false)), secs, float64(total)/1e6, float64(peak.Load())/1e6,
				float64(before.HeapAlloc)/1e6, s.RougeL.FMeasure, s.RougeLsum.FMeasure)
			if total > 1<<30/4 {
				t.Errorf("scoring allocated %d bytes in all, want well under 1 GB (256 MB)", total)
			}
			if !(s.RougeL.FMeasure > 0 && s.RougeLsum.FMeasure > 0) {
				t.Errorf("scores %+v", s)
			}
		})
	}
}

// TestRougeTokenCap: a text over MaxRougeTokens is an error, not hours.
func TestRougeTokenCap(t *testing.T) {
	long := strings.Repeat("a ", MaxRougeTokens+1)
	for _, tc := range []struct{ name, ref, pred, want string }{
		{"prediction", "a b", long, "prediction has 200001 tokens"},
		{"reference", long, "a b", "reference has 200001 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Rouge(tc.ref, tc.pred, false); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	if _, err := Rouge(strings.Repeat("a ", MaxRougeTokens), "a", false); err != nil {
		t.Errorf("at the cap: %v", err)
	}
}

// Leaving out the lines without tokens changes no score.
func TestRougeLsumTokenlessLinesScoreNothing(t *testing.T) {
	for _, c := range [][2]string{
		{"the cat sat\n.\non the mat", "...\nthe cat\n!!\nsat on a mat\n"},
		{".\n.\n", "a\n"},
		{"a b a\nb a\n", "--\nb a b\n;\na\n"},
	} {
		plain := func(s string) string {
			var keep []string
			for _, l := range strings.Split(s, "\n") {
				if len(RougeTokenize(l, true)) > 0 {
					keep = append(keep, l)
				}
			}
			return strings.Join(keep, "\n")
		}
		a, _ := Rouge(c[0], c[1], true)
		b, _ := Rouge(plain(c[0]), plain(c[1]), true)
		if a.RougeLsum != b.RougeLsum {
			t.Errorf("%q, %q: %+v, without the tokenless lines %+v", c[0], c[1], a.RougeLsum, b.RougeLsum)
		}
	}
}

// BenchmarkRougeLsumTokenlessLines: lines without tokens cost 3 bytes each
// (".\n") and are not bounded by MaxRougeTokens; ROUGE-Lsum paired every
// reference line with every prediction line, so a 600 KB prediction took
// minutes and a 64 MiB one (meazo-eval score's line cap) hours. 20,000
// reference lines against 100,001: 5.4 s before those lines were left
// out, 76 ms after (Zen 5, 2026-12-02, beside other work).
func BenchmarkRougeLsumTokenlessLines(b *testing.B) {
	ref := strings.Repeat("a\n", 20000)
	pred := "a\n" + strings.Repeat(".\n", 100000)
	for b.Loop() {
		s, err := Rouge(ref, pred, false)
		if err != nil || s.RougeLsum != s.RougeL {
			b.Fatalf("%v: rougeLsum %+v, want rougeL's %+v", err, s.RougeLsum, s.RougeL)
		}
	}
}
