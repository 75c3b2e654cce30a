package cuda

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// geluSweep is the GELU bit check's inputs: every float32 of the
// cancellation region [-9, -4] (there 1 + erf(x/√2) keeps few bits, so an
// erf off by one float64 ulp changes the float32 result at many inputs:
// what the H200 showed at x ≈ -6), 4,096 floats on each side of each
// bound of s_erf.c's branches (|x|/√2 = 2^-28, 0.84375, 1.25, 1/0.35, 6),
// both signs, about a million bit patterns evenly over all of float32
// (every exponent, denormals, NaNs), a million floats evenly over
// [-9, 9], and the special values.
func geluSweep() []float32 {
	var x []float32
	for u := math.Float32bits(4); u <= math.Float32bits(9); u++ {
		x = append(x, -math.Float32frombits(u))
	}
	for _, bound := range []float64{0x1p-28, 0.84375, 1.25, 1 / 0.35, 6} {
		c := math.Float32bits(float32(bound * math.Sqrt2))
		for u := c - 4096; u <= c+4096; u++ {
			x = append(x, math.Float32frombits(u), -math.Float32frombits(u))
		}
	}
	for u := uint64(0); u < 1<<32; u += 4093 {
		x = append(x, math.Float32frombits(uint32(u)))
	}
	for u := uint32(0); u <= math.Float32bits(9); u += 2053 {
		x = append(x, math.Float32frombits(u), -math.Float32frombits(u))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001), // a negative quiet NaN, a signalling one
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.Float32frombits(0x007fffff), math.Float32frombits(0x807fffff),
		math.Float32frombits(0x00800000), math.Float32frombits(0x80800000), math.MaxFloat32, -math.MaxFloat32, 1, -1, 40, -40)
	return x
}

// down downloads x and frees it.
func down(b tensor.Backend, x tensor.Buf) []float32 {
	h := slices.Clone(b.ToHost(x))
	b.Free(x)
	return h
}

// checkGELUBits runs b's GELU over geluSweep and requires the CPU backend's
// bits at every input (a NaN for a NaN: its payload is the hardware's).
func checkGELUBits(t *testing.T, b tensor.Backend) {
	in := geluSweep()
	run := func(b tensor.Backend) []float32 {
		x := b.FromHost(slices.Clone(in)) // the CPU backend's buffer may be the slice
		b.GELU(x)
		return down(b, x)
	}
	want, got := run(cpu.New(cpu.Options{})), run(b)
	bad := 0
	for i := range in {
		g, w := got[i], want[i]
		if math.Float32bits(g) == math.Float32bits(w) || g != g && w != w {
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("GELU(%g) (bits %#08x) is %g (%#08x), the CPU backend's %g (%#08x)", in[i], math.Float32bits(in[i]),
				g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
	if bad > 0 {
		t.Errorf("GELU differs from the CPU backend's bits at %d of %d inputs", bad, len(in))
	}
}

// TestEmulatedGELUBits checks that the gelu kernel gives the CPU backend's
// bits over geluSweep on the emulator. It holds because gelu.cu's erf is the
// CPU's, transcribed (erf.cuh), not libm's: the emulator's libm is glibc's,
// the same Sun algorithm as the CPU's, and so hid that CUDA's erf was not
// (TestKernelsCallNoLibmMath keeps libm out). TestConformance runs the same
// sweep on a GPU.
func TestEmulatedGELUBits(t *testing.T) {
	checkGELUBits(t, newEmuBackend(t))
}

// libmMath matches a call of a CUDA math function that is not correctly
// rounded (libm's in the emulator, CUDA's own on a GPU: the two differ in
// ulps, so the emulator cannot vouch for the GPU's bits where a kernel calls
// one). The kernels compute what must match the CPU with the rounded
// intrinsics and the CPU's own algorithms (cephes_expf, erf64).
var libmMath = regexp.MustCompile(`\b(?:__)?(erfc?x?|erfc?inv|normcdf(?:inv)?|exp(?:2|10|m1)?|log(?:2|10|1p)?|pow|powi|rsqrt|rcbrt|cbrt|` +
	`hypot|rhypot|norm3d|norm4d|rnorm|tgamma|lgamma|sinh?|cosh?|tanh?|asinh?|acosh?|atanh?|atan2|sincos|sinpi|cospi|sincospi|` +
	`j0|j1|jn|y0|y1|yn|cyl_bessel_i[01])f?\s*\(`)

// libmAllowed are the calls libmMath may find, by file: cross_entropy's
// float64 exp and log (its op is not held to the CPU's bits: its reduction
// sums in another order, kernelsMatchCPU).
var libmAllowed = map[string][]string{"cross_entropy.cu": {"exp(", "log("}}

// TestKernelsCallNoLibmMath: no kernel calls a libm function whose result
// must match the CPU's bits (every call but libmAllowed's), which the
// emulator would compute with glibc's and so not as a GPU does.
func TestKernelsCallNoLibmMath(t *testing.T) {
	comments := regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	for _, dir := range []string{"kernels", "kernels_sm90a"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.cu*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no kernel sources (%v)", dir, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code := comments.ReplaceAllString(string(src), "")
			for _, m := range libmMath.FindAllString(code, -1) {
				call := strings.Join(strings.Fields(m), "")
				if !slices.Contains(libmAllowed[filepath.Base(f)], call) {
					t.Errorf("%s calls %s): a libm function, whose bits on a GPU are not the emulator's (glibc's) nor the CPU's; "+
						"transcribe the CPU's algorithm with the rounded intrinsics (as erf.cuh, cephes_expf)", f, call)
				}
			}
		}
	}
	// The check finds what it looks for.
	for _, s := range []string{"erf(x)", "exp (y)", "__expf(v)", "tanhf(u)", "log1p(w)"} {
		if !libmMath.MatchString(s) {
			t.Errorf("libmMath misses %q", s)
		}
	}
	for _, s := range []string{"erf64(x)", "cephes_expf(v)", "exp64(y)", "erf64_poly(z, pp, 4)"} {
		if libmMath.MatchString(s) {
			t.Errorf("libmMath takes %q for a libm call", s)
		}
	}
}

// TestErfConstantsInPTX checks erf.cuh's transcription of the CPU's erf:
// every float constant of tensor/cpu/gelu.go and of exp64 (tensor/cpu/ops.go)
// is written in erf.cuh, and every constant of erf.cuh is in the gelu
// kernel's PTX with the bits Go gives it (NVRTC rounded the decimal as the
// Go compiler does).
func TestErfConstantsInPTX(t *testing.T) {
	lit := regexp.MustCompile(`\d+\.\d+e[+-]\d+`)
	cuh, err := os.ReadFile("kernels/erf.cuh")
	if err != nil {
		t.Fatal(err)
	}
	gelu, err := os.ReadFile("../cpu/gelu.go")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := os.ReadFile("../cpu/ops.go")
	if err != nil {
		t.Fatal(err)
	}
	_, exp, _ := strings.Cut(string(ops), "func exp64(")
	exp, _, _ = strings.Cut(exp, "\n}\n")
	goLits := append(lit.FindAllString(string(gelu), -1), lit.FindAllString(exp, -1)...)
	cuhLits := lit.FindAllString(string(cuh), -1)
	if len(goLits) < 60 {
		t.Fatalf("found %d constants in gelu.go and exp64, want the 60 or more of s_erf.c and exp", len(goLits))
	}
	for _, l := range goLits {
		if !slices.Contains(cuhLits, l) {
			t.Errorf("the CPU's erf has the constant %s, erf.cuh does not", l)
		}
	}
	_, ptx, ok := strings.Cut(kernelsPTX, ".entry gelu(")
	if !ok {
		t.Fatal("kernels.ptx has no gelu kernel")
	}
	ptx, _, _ = strings.Cut(ptx, "\n}\n")
	for _, l := range append(cuhLits, "2.857142857142857", "3.7252902984619140625e-09") {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil {
			t.Fatal(err)
		}
		// The compiler may fold a negative constant's sign into the operation (x + -c as x - c).
		if hex := func(v float64) string { return fmt.Sprintf("0d%016X", math.Float64bits(v)) }; !strings.Contains(ptx, hex(v)) && !strings.Contains(ptx, hex(-v)) {
			t.Errorf("erf.cuh's constant %s (%s) is not in the gelu kernel's PTX", l, hex(v))
		}
	}
	if v := 1 / 0.35; strconv.FormatFloat(v, 'g', -1, 64) != "2.857142857142857" {
		t.Errorf("Go's 1/0.35 is %v, erf.cuh writes 2.857142857142857", v)
	}
}
