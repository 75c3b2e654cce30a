package safetensors

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestFloat16BitsNumpy: Float16Bits rounds as numpy (and torch) round a
// float32 to float16, on the values testdata/make_float16_numpy.py drew:
// random bit patterns, a third of them exactly halfway between two halves,
// the edges of the range and of the subnormals, infinities.
func TestFloat16BitsNumpy(t *testing.T) {
	f, err := os.Open("testdata/float16_numpy.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, n := bufio.NewScanner(f), 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		x, err1 := strconv.ParseUint(a, 16, 32)
		want, err2 := strconv.ParseUint(b, 16, 16)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", line)
		}
		v := math.Float32frombits(uint32(x))
		if got := Float16Bits(v); got != uint16(want) {
			t.Errorf("Float16Bits(%g = %08x) = %04x, numpy %04x", v, x, got, want)
		}
		n++
	}
	if n < 300 {
		t.Fatalf("read %d values, want the file's 373", n)
	}
}

// TestFloat16BitsEveryHalf: every half comes back as itself, and a
// float32 between two neighbouring halves goes to the nearer one, to the
// one with an even last bit when exactly halfway.
func TestFloat16BitsEveryHalf(t *testing.T) {
	for h := range uint32(0x10000) {
		x := f16ToFloat32(uint16(h))
		got := Float16Bits(x)
		if x != x { // NaN: stays a NaN of the same sign
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 || got&0x8000 != uint16(h)&0x8000 {
				t.Errorf("NaN %04x became %04x", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Errorf("half %04x (%g) came back as %04x", h, x, got)
		}
		if h&0x7fff >= 0x7c00 || h == 0x7bff || h == 0xfbff {
			continue // infinity, or the largest finite: its upper neighbour is infinity (below)
		}
		next := uint16(h + 1) // the neighbour away from zero (magnitudes grow with the bits)
		up := f16ToFloat32(next)
		mid := x + (up-x)/2 // exact: a half has 11 significant bits
		even := uint16(h)
		if h&1 == 1 {
			even = next
		}
		if got := Float16Bits(mid); got != even {
			t.Errorf("midpoint %g of %04x and %04x: %04x, want %04x", mid, h, next, got, even)
		}
		toward := math.Nextafter32(mid, x)
		away := math.Nextafter32(mid, up)
		if Float16Bits(toward) != uint16(h) || Float16Bits(away) != next {
			t.Errorf("around the midpoint of %04x and %04x: %04x and %04x", h, next, Float16Bits(toward), Float16Bits(away))
		}
	}
	// Beyond 65504: 65519.996 still rounds down, 65520 is the midpoint with
	// infinity and goes up (65504's last bit is odd), as IEEE says.
	for _, c := range []struct {
		x    float32
		want uint16
	}{{65519.996, 0x7bff}, {65520, 0x7c00}, {-65520, 0xfc00}, {math.MaxFloat32, 0x7c00}, {1e-40, 0}} {
		if got := Float16Bits(c.x); got != c.want {
			t.Errorf("Float16Bits(%g) = %04x, want %04x", c.x, got, c.want)
		}
	}
}

// TestF16TensorRoundTrip: F16Tensor's bytes read back as RoundF16's values.
func TestF16TensorRoundTrip(t *testing.T) {
	in := []float32{1, -2.5, 0.1, 3e-6, 70000, -1e-9}
	path := t.TempDir() + "/h.safetensors"
	if err := WriteFile(path, []Tensor{F16Tensor("h", []int{2, 3}, in)}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Float32("h")
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range in {
		if want := RoundF16(x); got[i] != want && !(want != want && got[i] != got[i]) {
			t.Errorf("value %d: read %g, want %g (%g rounded to float16)", i, got[i], want, x)
		}
	}
	if !math.IsInf(float64(got[4]), 1) || got[5] != 0 || !math.Signbit(float64(got[5])) {
		t.Errorf("70000 and -1e-9 read back as %g and %g, want +Inf and -0", got[4], got[5])
	}
}
