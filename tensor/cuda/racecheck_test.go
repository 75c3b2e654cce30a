package cuda

// The emulator as a race checker (MEAZO_CUDA_EMU_RACE=1, `make
// test-racecheck`): built with ThreadSanitizer, each thread of a block a
// fiber and each __syncthreads a barrier it knows of (emu/emu.cpp's top), it
// reports two threads of a block that touch one address between two
// barriers, one of them writing, and threads of a block that wait at
// different barriers: what compute-sanitizer's racecheck and synccheck find
// on a GPU, for every kernel the emulated tests launch, without one.

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"os"
	"os/exec"
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

// raceReports readies the race checker's run as cmd (not yet started):
// ThreadSanitizer goes on after a report, every report is kept, and once
// the test's emulator is closed (cleanups run last first: this one after
// the backend's Close) the test fails with each report it wrote.
func raceReports(t *testing.T, cmd *exec.Cmd) *lockedBuffer {
	t.Helper()
	reports := &lockedBuffer{}
	cmd.Env = append(os.Environ(), "TSAN_OPTIONS=halt_on_error=0 report_signal_unsafe=0 history_size=4")
	cmd.Stderr = io.MultiWriter(os.Stderr, reports)
	t.Cleanup(func() {
		if r := reports.String(); strings.Contains(r, "WARNING: ") {
			t.Errorf("the race checker found %d races and %d barriers in divergent code in the kernels this test launched:\n%s",
				strings.Count(r, "WARNING: ThreadSanitizer"), strings.Count(r, "WARNING: emu synccheck"), r)
		}
	})
	return reports
}

// TestRaceCheckerFindsRaces: the race checker itself, on emu/race_probe.cu
// (built in under MEAZO_CUDA_EMU_RACE=1 only): a block whose threads read a
// shared slot that another writes with no barrier between is one race
// reported; with the barrier, over several blocks that reuse the same
// static array, nothing is; with the barrier in both branches of a branch
// on the thread index, one barrier in divergent code is.
func TestRaceCheckerFindsRaces(t *testing.T) {
	if !emuRaceCheck {
		t.Skip("MEAZO_CUDA_EMU_RACE=1 (make test-racecheck) builds the race checker this tests")
	}
	bin, err := buildEmu()
	if err != nil {
		t.Fatal(err)
	}
	const threads, blocks = 64, 3
	for _, c := range []struct {
		kernel, want string // what the checker must report; "" nothing
	}{{"emu_probe_synced", ""}, {"emu_probe_racy", "WARNING: ThreadSanitizer: data race"}, {"emu_probe_divergent", "WARNING: emu synccheck"}} {
		e := &emu{cmd: exec.Command(bin)}
		stdin, _ := e.cmd.StdinPipe()
		stdout, _ := e.cmd.StdoutPipe()
		reports := &lockedBuffer{}
		e.cmd.Env = append(os.Environ(), "TSAN_OPTIONS=halt_on_error=0 report_signal_unsafe=0")
		e.cmd.Stderr = reports
		if err := e.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.in, e.out = bufio.NewWriter(stdin), bufio.NewReader(stdout)
		out, err := e.malloc(4 * threads * blocks)
		if err == nil {
			err = e.launch(c.kernel, [3]uint32{blocks, 1, 1}, threads, 0, []uint64{out})
		}
		e.in.Flush()
		stdin.Close() // the emulator exits at the end of its input, writing what TSan has to say
		e.cmd.Wait()
		if err != nil {
			t.Fatalf("%s: %v", c.kernel, err)
		}
		r := reports.String()
		switch {
		case c.want == "" && strings.Contains(r, "WARNING"):
			t.Errorf("%s: the checker reported what is not there:\n%s", c.kernel, r)
		case c.want != "" && (strings.Count(r, "WARNING") != 1 || !strings.Contains(r, c.want) || !strings.Contains(r, c.kernel)):
			t.Errorf("%s: want one report %q naming it; the checker wrote:\n%s", c.kernel, c.want, r)
		case c.want != "":
			t.Logf("%s: reported as it should be; the report's first lines:\n%s", c.kernel, firstLines(r, 6))
		}
	}
}

// firstLines is s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// raceChecked counts the kernels launched on the race checker in this test
// binary (emu.launch), for TestRaceCheck's account of what it covered.
var raceChecked = launchSet{n: map[string]int{}}

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

// TestRaceCheck is `make test-racecheck`: every kernel of kernels/ and
// kernels_sm90a/ under the race checker, at the small, awkward shapes of the
// conformance suite's op checks (with each attention path), the encoder's,
// the full-parameter kernels' (blocks of rows, paired products, the noise),
// the bfloat16 products', gemm_3xtf32's three variants and its split k, and
// the fixture models' forwards for the kernels only a model launches (the
// per-head norms with RoPE among them); it lists any kernel none of them
// launched. The other emulated tests launch the
// same kernels on more shapes, about 16 times slower under the checker
// than on the plain emulator, so they are not part of it; any of them runs
// on the checker with MEAZO_CUDA_EMU_RACE=1 set by hand.
func TestRaceCheck(t *testing.T) {
	if !emuRaceCheck {
		t.Skip("MEAZO_CUDA_EMU_RACE=1 (make test-racecheck) runs the kernels on the race checker")
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
	if missing := raceChecked.missing(); len(missing) > 0 {
		t.Logf("kernels not launched on the race checker: %s", strings.Join(missing, ", "))
	}
}
