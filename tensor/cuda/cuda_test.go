package cuda

import (
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model/modeltest"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backendtest"
	"github.com/meazo-go/meazo/tensor/cpu"
	"github.com/meazo-go/meazo/tensor/cuda/internal/kernelsrc"
	"github.com/meazo-go/meazo/tensor/cuda/internal/nvrtc"
)

// openOrSkip opens GPU 0 with the options the environment gives
// (tensor.EnvOptions: scripts/gpu/session.sh runs the suite with each), or
// skips the test saying why there is none.
func openOrSkip(t *testing.T) *Backend {
	t.Helper()
	env, err := tensor.EnvOptions(tensor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := optionsOf(env)
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(o)
	if err != nil && o.TF32x3 {
		t.Fatalf("MEAZO_CUDA_3XTF32=1 asks for the tensor-core products, and the backend did not open: %v", err)
	}
	if err != nil {
		t.Skipf("no CUDA GPU here, so the GPU checks did not run: %v", err)
	}
	if o.TF32x3 {
		// The fixtures' products are short (k = 64 in the tiny models) and
		// their grids far from filling the GPU: take them all on the tensor
		// cores, unsplit, as TestEmulatedConformance3xTF32 does, so that the
		// checks run under MEAZO_CUDA_3XTF32=1 exercise the kernel (the fill
		// rule and the split k: TestGemm3xTF32OnGPU).
		b.tf32x3MinK, b.sms = 32, 0
	}
	t.Cleanup(func() { b.Close() })
	t.Log(b.Describe())
	return b
}

// TestConformance runs the backend conformance suite on the GPU: every op
// against the CPU backend, the fixture models against the HF references, and
// the model on CUDA against the model on the CPU (its saves too).
func TestConformance(t *testing.T) {
	b := openOrSkip(t)
	backendtest.Ops(t, b, backendtest.Float32)
	modeltest.Models(t, b, backendtest.Float32)
	t.Run("Ministral3", func(t *testing.T) { modeltest.Ministral(t, b, backendtest.Float32) })
	t.Run("Save", func(t *testing.T) { modeltest.Save(t, b) })
	t.Run("GELUBits", func(t *testing.T) { checkGELUBits(t, b) }) // the CPU's bits with or without its fused multiply-adds
	if cpu.GEMMPath() != "portable" {
		t.Run("KernelsMatchCPUBits", func(t *testing.T) {
			// The encoder's batched GEMMs (the default from 64 tokens) sum in
			// cuBLAS's order: the bit check runs the exact encoder_attention,
			// the Ops above the path the options choose.
			defer func(m int) { b.encGEMMMinTokens = m }(b.encGEMMMinTokens)
			b.encGEMMMinTokens = 0
			backendtest.Ops(t, b, kernelsMatchCPU)
		})
	}
}

// TestOpenFailsInOneLine: where no GPU or library is found, Open's error is
// one line that names what is missing.
func TestOpenFailsInOneLine(t *testing.T) {
	b, err := Open(Options{})
	if err == nil {
		b.Close()
		t.Skip("a GPU is present: Open succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "cuda: ") && !strings.Contains(msg, "not found") {
		t.Errorf("Open's error should be one line naming what is missing, got %q", msg)
	}
	if _, err := Open(Options{Device: -1}); err == nil {
		t.Errorf("Open of GPU -1 succeeded")
	}
}

// TestCublasBinds opens every cuBLAS major version the backend accepts that
// this machine has and binds every function the backend calls: dlopen and
// dlsym need no GPU, so the cuBLAS 11.8 of the CUDA Docker image (Debian
// non-free's libcublas11) is checked here even though no GPU has run it.
// Without any cuBLAS it skips, unless MEAZO_REQUIRE_CUBLAS=1 (CI sets it,
// after installing libcublas11).
func TestCublasBinds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the backend loads cuBLAS on Linux only (dlopen_other.go)")
	}
	present := 0
	for _, major := range cublasMajors {
		c, err := loadCublas(major)
		if err != nil && strings.Contains(err.Error(), "not found") {
			t.Logf("cuBLAS %d: %v", major, err)
			continue
		}
		present++
		if err != nil {
			t.Errorf("cuBLAS %d: %v", major, err)
		} else {
			t.Logf("cuBLAS %d: %s has every function the backend calls", major, c.path)
		}
	}
	if present == 0 {
		if os.Getenv("MEAZO_REQUIRE_CUBLAS") == "1" {
			t.Fatal("no cuBLAS found, and MEAZO_REQUIRE_CUBLAS=1")
		}
		t.Skip("no cuBLAS here (libcublas.so.13, .12 or .11), so no binding was checked")
	}
}

// TestKernelTableMatchesPTX checks that every kernel the Go code launches is
// in the embedded PTX with the parameters kernelParams (and hopperParams,
// for kernels_sm90a.ptx) declares, so a mismatch between the sources and
// the launches is caught without a GPU.
func TestKernelTableMatchesPTX(t *testing.T) {
	for _, m := range []struct {
		file, ptx, target string
		params            map[string][]param
	}{
		{"kernels.ptx", kernelsPTX, ".target sm_80", kernelParams},
		{"kernels_sm90a.ptx", hopperPTX, ".target sm_90a", hopperParams},
	} {
		checkKernelTable(t, m.file, m.ptx, m.params)
		if !strings.Contains(m.ptx, "\n"+m.target+"\n") {
			t.Errorf("%s does not say %q", m.file, m.target)
		}
	}
}

func checkKernelTable(t *testing.T, file, ptx string, params map[string][]param) {
	entry := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\)`)
	paramRE := regexp.MustCompile(`\.param \.(\w+) \w+`)
	found := map[string][]string{}
	for _, m := range entry.FindAllStringSubmatch(ptx, -1) {
		var types []string
		for _, p := range paramRE.FindAllStringSubmatch(m[2], -1) {
			types = append(types, p[1])
		}
		found[m[1]] = types
	}
	ptxType := map[param]string{ptr: "u64", i64: "u64", i32: "u32", f32: "f32", f64: "f64"}
	for name, want := range params {
		got, ok := found[name]
		if !ok {
			t.Errorf("kernel %s is launched but not in %s", name, file)
			continue
		}
		var w []string
		for _, p := range want {
			w = append(w, ptxType[p])
		}
		if !slices.Equal(got, w) {
			t.Errorf("kernel %s: PTX parameters %v, launches declare %v", name, got, w)
		}
	}
	for name := range found {
		if _, ok := params[name]; !ok {
			t.Errorf("%s has kernel %s that the Go code does not declare", file, name)
		}
	}
}

// TestGemm3xTF32Layout checks the Go side's constants of gemm_3xtf32
// (matmul.go) against the #defines of its source, which the PTX does not
// keep: the descriptors' column offset and the dynamic shared memory.
func TestGemm3xTF32Layout(t *testing.T) {
	src, err := os.ReadFile("kernels_sm90a/gemm_3xtf32.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"#define GW_TM 128", "#define GW_TN 128", "#define GW_TK 32", "#define GW_QUADS (GW_TK / 4)",
		"#define GW_COL_BYTES (GW_TM * 16 + 16)", "#define GW_TILE_BYTES (GW_QUADS * GW_COL_BYTES)",
		"#define GW_STAGE_BYTES (4 * GW_TILE_BYTES)", "#define GW_SMEM_BYTES (2 * GW_STAGE_BYTES)"} {
		if !strings.Contains(string(src), d) {
			t.Errorf("gemm_3xtf32.cu has no %q: update gemm3xTF32Col and gemm3xTF32Shm", d)
		}
	}
	if gemm3xTF32Col != 128*16+16 || gemm3xTF32Shm != 2*4*(32/4)*gemm3xTF32Col {
		t.Errorf("gemm3xTF32Col %d, gemm3xTF32Shm %d: not the source's", gemm3xTF32Col, gemm3xTF32Shm)
	}
}

// TestTrainerKernelsRound: the kernels of full-parameter ZO, whose noise
// values and updated elements must have the host's bits, round every
// operation as written: no fused multiply-add (NVRTC contracts a plain
// a*b+c by default, --fmad=true; the intrinsics it may not), no flush to
// zero, no approximate division or square root, no call into code this
// test does not see.
func TestTrainerKernelsRound(t *testing.T) {
	bad := regexp.MustCompile(`\b(fma|mad)\.[a-z.]*f(32|64)\b|\.ftz\b|\.approx\b|\bcall\b`)
	for _, name := range []string{"noise_fill", "noise_bits", "noise_normal_words", "perturb_copy", "perturb_rows", "zo_update"} {
		m := regexp.MustCompile(`(?s)\.entry ` + name + `\(.*?\)\s*\{(.*?)\n\}\n`).FindStringSubmatch(kernelsPTX)
		if m == nil {
			t.Errorf("kernel %s not in kernels.ptx", name)
			continue
		}
		if op := bad.FindString(m[1]); op != "" {
			t.Errorf("kernel %s: %q in its PTX", name, op)
		}
		if !strings.Contains(m[1], "mul.rn.f") && name != "noise_bits" {
			t.Errorf("kernel %s: no rounded product in its PTX (the test reads the wrong text?)", name)
		}
	}
}

// TestBF16RoundingMatchesCPU: Pack with bf16 stores the same bfloat16
// values as the CPU backend (round to nearest even, NaN kept).
func TestBF16RoundingMatchesCPU(t *testing.T) {
	vals := []float32{0, 1, -1, 1.00390625, 1.01171875, 3.1415927, -2.7182817, 1e-40, 3.4e38, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), 65504, 1.0000001, 0.1}
	for i := range 2000 {
		vals = append(vals, math.Float32frombits(uint32(i)*2147483+12345))
	}
	packed := cpu.PackBF16(vals, len(vals), 1)
	c := cpu.New(cpu.Options{})
	got := make(cpu.HostBuf, len(vals))
	ids := make([]int, len(vals))
	for i := range ids {
		ids[i] = i
	}
	c.Rows(got, packed, ids)
	for i, v := range vals {
		want := math.Float32bits(got[i])
		mine := uint32(toBF16(v)) << 16
		if math.IsNaN(float64(v)) {
			if !math.IsNaN(float64(math.Float32frombits(mine))) {
				t.Errorf("toBF16(NaN) is not NaN")
			}
			continue
		}
		if mine != want {
			t.Errorf("toBF16(%g) = %#x, the CPU backend's %#x", v, mine, want)
		}
	}
}

// TestPTXIsCurrent compiles the kernels of kernels/ and kernels_sm90a/
// with the pinned NVRTC and requires the embedded PTX to be exactly that,
// so every kernel is compile-checked on every change even without a GPU.
// Without NVRTC it skips, unless MEAZO_REQUIRE_NVRTC=1 (CI sets it, after
// installing NVRTC).
func TestPTXIsCurrent(t *testing.T) {
	for _, m := range []struct {
		dir, file, embedded string
		compile             func(string) ([]byte, error)
	}{
		{"kernels", "kernels.ptx", kernelsPTX, kernelsrc.PTX},
		{"kernels_sm90a", "kernels_sm90a.ptx", hopperPTX, kernelsrc.PTXHopper},
	} {
		if _, err := kernelsrc.Read(m.dir); err != nil {
			t.Fatal(err)
		}
		ptx, err := m.compile(m.dir)
		if err != nil {
			if os.Getenv("MEAZO_REQUIRE_NVRTC") == "1" || strings.Contains(err.Error(), "compilation failed") || strings.Contains(err.Error(), "warnings") {
				t.Fatal(err)
			}
			t.Skipf("NVRTC is not usable here, so the PTX was not regenerated: %v", err)
		}
		if string(ptx) != m.embedded {
			t.Fatalf("%s is not what NVRTC %d.%d makes of %s/: run go generate ./tensor/cuda and commit it", m.file, nvrtc.WantMajor, nvrtc.WantMinor, m.dir)
		}
		if first, _, _ := strings.Cut(m.embedded, "\n"); !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).MatchString(first) {
			t.Errorf("%s starts %q, not Go's line for a generated file", m.file, first)
		}
	}
}
