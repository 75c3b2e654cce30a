package cuda

// The emulator as a checker of the kernels, without a GPU (`make
// test-kernel-checks`): MEAZO_CUDA_EMU_CHECK=race builds it with
// ThreadSanitizer, each thread of a block a fiber and each __syncthreads a
// barrier it knows of (emu/emu.cpp's top), and it reports two threads of a
// block that touch one address between two barriers, one of them writing,
// and threads of a block that wait at different barriers (what
// compute-sanitizer's racecheck and synccheck find on a GPU);
// MEAZO_CUDA_EMU_CHECK=memory builds it with AddressSanitizer, and it reports
// a kernel's access outside a device allocation, a __shared__ array or the
// launch's dynamic shared memory (memcheck's).

import (
	"bytes"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meazo-go/meazo/model/modeltest"
	"github.com/meazo-go/meazo/tensor/backendtest"
)

// lockedBuffer collects what a child process writes to its stderr.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// checkerReports returns the stderr of a test's emulator under the checker:
// os.Stderr, and every report kept, so that once the emulator is closed
// (cleanups run last first: this one after the backend's Close) the test
// fails with each report it wrote.
func checkerReports(t *testing.T) io.Writer {
	t.Helper()
	reports := &lockedBuffer{}
	t.Cleanup(func() {
		if r := reports.String(); checkerFaults(r) > 0 {
			t.Errorf("the %s checker found %d faults in the kernels this test launched:\n%s", emuCheck, checkerFaults(r), r)
		}
	})
	return io.MultiWriter(os.Stderr, reports)
}

// probeKernels are emu/probe.cu's, built into the emulator under a checker.
var probeKernels = []string{"emu_probe_racy", "emu_probe_synced", "emu_probe_divergent", "emu_probe_past_end"}

// TestCheckerFindsFaults: the checker itself, on emu/probe.cu's kernels: a
// block whose threads read a shared slot another writes with no barrier
// between is one race; with the barrier, over several blocks that reuse the
// same static array, there is nothing to report; with the barrier in both
// branches of a branch on the thread index, one barrier in divergent code;
// a read one element past the end of a device allocation, one
// heap-buffer-overflow (for the memory checker, which sees no race, and the
// race checker, which sees no overflow).
func TestCheckerFindsFaults(t *testing.T) {
	if emuCheck == "" {
		t.Skip("MEAZO_CUDA_EMU_CHECK=race or memory (make test-kernel-checks) builds the checker this tests")
	}
	bin, err := buildEmu()
	if err != nil {
		t.Fatal(err)
	}
	const threads, blocks = 64, 3
	want := map[string]map[string]string{ // checker → kernel → the report it must give ("" none)
		"race":   {"emu_probe_racy": "WARNING: ThreadSanitizer: data race", "emu_probe_divergent": "WARNING: emu synccheck"},
		"memory": {"emu_probe_past_end": "ERROR: AddressSanitizer: heap-buffer-overflow"},
	}[emuCheck]
	for _, kernel := range probeKernels {
		reports := &lockedBuffer{}
		e, stdin := startEmu(t, bin, reports)
		out, err := e.malloc(4 * threads * blocks)
		if err == nil {
			err = e.launch(kernel, [3]uint32{blocks, 1, 1}, threads, 0, []uint64{out})
		}
		e.in.Flush()
		stdin.Close() // the emulator exits at the end of its input, writing what the checker has to say
		e.cmd.Wait()
		if err != nil {
			t.Fatalf("%s: %v", kernel, err)
		}
		r, w := reports.String(), want[kernel]
		faults := checkerFaults(r)
		switch {
		case w == "" && faults > 0:
			t.Errorf("%s: the %s checker reported what is not there:\n%s", kernel, emuCheck, r)
		case w != "" && (faults != 1 || !strings.Contains(r, w) || !strings.Contains(r, kernel)):
			t.Errorf("%s: want one report %q naming it; the %s checker wrote:\n%s", kernel, w, emuCheck, r)
		case w != "":
			t.Logf("%s: reported as it should be; the report's first lines:\n%s", kernel, firstLines(r, 6))
		}
	}
}

// firstLines is s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// checked counts the kernels launched on a checker in this test binary
// (emu.launch), for TestKernelsChecked's account of what it covered.
var checked = launchSet{n: map[string]int{}}

type launchSet struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *launchSet) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[name]++
}

// missing lists the kernels the backend declares that were never launched.
func (l *launchSet) missing() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(kernelParams)) {
		if l.n[name] == 0 {
			out = append(out, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(hopperParams)) {
		if l.n[name] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// TestKernelsChecked is `make test-kernel-checks`: every kernel of kernels/
// and kernels_sm90a/ under the checker, at the small, awkward shapes of the
// conformance suite's op checks (with each attention path), the encoder's,
// the full-parameter kernels' (blocks of rows, paired products, the noise),
// the bfloat16 products', gemm_3xtf32's three variants and its split k, and
// the fixture models' forwards for the kernels only a model launches (the
// per-head norms with RoPE among them); it fails if any kernel is left
// out. The other emulated tests launch the same kernels on more shapes,
// about 16 times slower under the race checker than on the plain emulator,
// so they are not part of it; any of them runs on a checker with
// MEAZO_CUDA_EMU_CHECK set by hand.
func TestKernelsChecked(t *testing.T) {
	if emuCheck == "" {
		t.Skip("MEAZO_CUDA_EMU_CHECK=race or memory (make test-kernel-checks) runs the kernels on that checker")
	}
	b := newEmuBackend(t)
	t.Run("Ops", func(t *testing.T) { backendtest.Ops(t, b, backendtest.Float32) })
	t.Run("EncoderOps", func(t *testing.T) { backendtest.EncoderOps(t, b, backendtest.Float32) })
	t.Run("Trainer", func(t *testing.T) {
		tb := newEmuBackend(t)
		tb.perturbChunk, tb.paired, tb.squares.limit = 1000, true, 1
		backendtest.Trainer(t, tb, backendtest.Exact)
	})
	for _, path := range []string{"tiled", "gemm"} { // the attention paths the defaults leave out at these sizes
		t.Run("Ops/attention="+path, func(t *testing.T) {
			backendtest.Ops(t, newEmuBackendWith(t, Options{Attention: path}), backendtest.Float32)
		})
	}
	t.Run("Noise", TestEmulatedNoise)
	t.Run("NormalTransform", TestEmulatedNormalTransform)
	t.Run("BF16Products", TestEmulatedBF16Products)
	t.Run("3xTF32Variants", TestEmulated3xTF32Variants)
	t.Run("3xTF32Split", TestEmulated3xTF32Split)
	t.Run("Model", func(t *testing.T) { modeltest.Attention(t, b, backendtest.Float32) })
	if missing := checked.missing(); len(missing) > 0 { // (a run of some of the subtests only leaves some out)
		t.Errorf("kernels never launched on the %s checker: %s (a new kernel needs a check that launches it here)",
			emuCheck, strings.Join(missing, ", "))
	}
}
