package cuda

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/meazo-go/meazo/model/modeltest"
	"github.com/meazo-go/meazo/tensor/backendtest"
	"github.com/meazo-go/meazo/tensor/cpu"
	"github.com/meazo-go/meazo/tensor/cuda/internal/kernelsrc"
)

// emu is a device that runs the kernels of kernels/ on the CPU in a child
// process built from emu/emu.cpp with the system's C++ compiler (see that
// file). Memory
// addresses are the child's own.
type emu struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Reader
	mu  sync.Mutex
}

var (
	emuOnce sync.Once
	emuBin  string
	emuErr  error
)

// emuCheck is MEAZO_CUDA_EMU_CHECK: with "race" or "memory" every emulated
// test runs on the emulator built as that checker (emu.cpp's top;
// checkers_test.go), with ThreadSanitizer or AddressSanitizer.
var emuCheck = os.Getenv("MEAZO_CUDA_EMU_CHECK")

// emuCheckers are the checkers' compiler flags, the environment their
// runtime reads (every report kept: the run goes on after one) and the
// starts of their reports (not of their notes: AddressSanitizer's warning
// that it does not fully support the emulator's fibers is one).
var emuCheckers = map[string]struct {
	flags   []string
	env     string
	reports []string
}{
	"race": {[]string{"-fsanitize=thread"}, "TSAN_OPTIONS=halt_on_error=0 report_signal_unsafe=0 history_size=4",
		[]string{"WARNING: ThreadSanitizer", "WARNING: emu synccheck"}},
	"memory": {[]string{"-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer"},
		"ASAN_OPTIONS=halt_on_error=0 detect_leaks=0", []string{"ERROR: AddressSanitizer"}},
}

// checkerFaults is how many reports of the checker emuCheck r holds.
func checkerFaults(r string) int {
	n := 0
	for _, start := range emuCheckers[emuCheck].reports {
		n += strings.Count(r, start)
	}
	return n
}

// TestMain removes the emulator buildEmu built (its directory under the
// system's temporary directory) once the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if emuBin != "" {
		os.RemoveAll(filepath.Dir(emuBin))
	}
	os.Exit(code)
}

// buildEmu compiles the emulator once per test binary: emu/emu.cpp with the
// kernels' translation unit (kernels/, as NVRTC compiles it) and a table of
// the kernels the backend declares (kernelParams); under emuCheck as that
// checker.
func buildEmu() (string, error) {
	emuOnce.Do(func() {
		checker, ok := emuCheckers[emuCheck]
		if !ok && emuCheck != "" {
			emuErr = fmt.Errorf("$MEAZO_CUDA_EMU_CHECK=%q: want race or memory", emuCheck)
			return
		}
		cxx, err := exec.LookPath("g++")
		if err != nil {
			emuErr = fmt.Errorf("no g++ to build the kernel emulator: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "meazo-cuda-emu")
		if err != nil {
			emuErr = err
			return
		}
		if emuErr = writeEmuSources(dir); emuErr != nil {
			return
		}
		kernels, err := filepath.Abs("kernels")
		if err != nil {
			emuErr = err
			return
		}
		hopper, err := filepath.Abs("kernels_sm90a")
		if err != nil {
			emuErr = err
			return
		}
		emuBin = filepath.Join(dir, "emu")
		flags := []string{"-O2"}
		if ok {
			flags = append([]string{"-O1", "-g"}, checker.flags...)
		}
		args := append(flags, "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-U_FORTIFY_SOURCE",
			"-I", dir, "-I", kernels, "-I", hopper, "-o", emuBin, "emu/emu.cpp")
		out, err := exec.Command(cxx, args...).CombinedOutput()
		if err != nil {
			emuErr = fmt.Errorf("building the kernel emulator: %v\n%s", err, out)
		}
	})
	return emuBin, emuErr
}

// writeEmuSources writes into dir the three files emu.cpp includes:
// kernels_unit.inc and hopper_unit.inc, the translation units of kernels/
// and kernels_sm90a/, and kernel_table.inc, a KERNEL(name) line per kernel
// of kernelParams and hopperParams.
func writeEmuSources(dir string) error {
	var table strings.Builder
	for _, name := range slices.Sorted(maps.Keys(kernelParams)) {
		fmt.Fprintf(&table, "KERNEL(%s)\n", name)
	}
	for _, name := range slices.Sorted(maps.Keys(hopperParams)) {
		fmt.Fprintf(&table, "KERNEL(%s)\n", name)
	}
	var probe []byte // the checkers' test kernels (checkers_test.go)
	if emuCheck != "" {
		var err error
		if probe, err = os.ReadFile("emu/probe.cu"); err != nil {
			return err
		}
		probe = append([]byte("#line 1 \"emu/probe.cu\"\n"), probe...) // its reports name its lines
		for _, name := range probeKernels {
			fmt.Fprintf(&table, "KERNEL(%s)\n", name)
		}
	}
	for unit, folder := range map[string]string{"kernels_unit.inc": "kernels", "hopper_unit.inc": "kernels_sm90a"} {
		src, err := kernelsrc.Read(folder)
		if err != nil {
			return err
		}
		text := []byte(src.Unit)
		if folder == "kernels" {
			text = append(text, probe...)
		}
		if err := os.WriteFile(filepath.Join(dir, unit), text, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "kernel_table.inc"), []byte(table.String()), 0o644)
}

// newEmuBackend returns the CUDA backend on the emulator, or skips (fails
// under MEAZO_REQUIRE_CUDA_EMU=1) where it cannot be built.
func newEmuBackend(t *testing.T) *Backend {
	t.Helper()
	return newEmuBackendWith(t, Options{})
}

// newEmuBackendWith is newEmuBackend with options o.
func newEmuBackendWith(t *testing.T, o Options) *Backend {
	t.Helper()
	bin, err := buildEmu()
	if err != nil {
		if os.Getenv("MEAZO_REQUIRE_CUDA_EMU") == "1" || emuCheck != "" {
			t.Fatal(err)
		}
		t.Skipf("the kernel emulator is not available, so the emulated checks did not run: %v", err)
	}
	stderr := io.Writer(os.Stderr)
	if emuCheck != "" {
		stderr = checkerReports(t)
	}
	e, _ := startEmu(t, bin, stderr)
	b, err := newBackend(e, "kernel emulator (kernels/*.cu on the CPU)", 48<<10, o)
	if err != nil {
		t.Fatal(err)
	}
	// Under the memory checker a read past a buffer's end is past its
	// allocation, and a freed buffer's memory is freed (not cached).
	b.exactAllocs = emuCheck == "memory"
	t.Cleanup(func() { b.Close() })
	return b
}

// startEmu starts the emulator bin as a device, its stderr to stderr and,
// under a checker, its runtime's settings in the environment; closing stdin
// ends it (as the end of its input).
func startEmu(t *testing.T, bin string, stderr io.Writer) (e *emu, stdin io.WriteCloser) {
	t.Helper()
	e = &emu{cmd: exec.Command(bin)}
	stdin, _ = e.cmd.StdinPipe()
	stdout, _ := e.cmd.StdoutPipe()
	e.cmd.Stderr = stderr
	if emuCheck != "" {
		e.cmd.Env = append(os.Environ(), emuCheckers[emuCheck].env)
	}
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e.in, e.out = bufio.NewWriterSize(stdin, 1<<20), bufio.NewReaderSize(stdout, 1<<20)
	return e, stdin
}

func (e *emu) put(vs ...any) {
	for _, v := range vs {
		if err := binary.Write(e.in, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
}

// reply flushes the request and reads the status.
func (e *emu) reply(what string) error {
	if err := e.in.Flush(); err != nil {
		return fmt.Errorf("emu %s: %w", what, err)
	}
	var status uint32
	if err := binary.Read(e.out, binary.LittleEndian, &status); err != nil {
		return fmt.Errorf("emu %s: %w", what, err)
	}
	if status != 0 {
		return fmt.Errorf("emu %s: status %d", what, status)
	}
	return nil
}

func (e *emu) bind() error { return nil }

// hasHopperKernels: the emulator runs kernels_sm90a too, its wgmma by a
// model of the tensor cores' arithmetic (emu.cpp; package tensorcore).
func (e *emu) hasHopperKernels() bool { return true }

// multiprocessors: 0, so that gemm_3xtf32 takes every shape it can on the
// emulator (its tests set Backend.sms to test fills3xTF32).
func (e *emu) multiprocessors() int { return 0 }

func (e *emu) malloc(bytes uint64) (uint64, error) {
	e.put(byte('A'), bytes)
	if err := e.reply("malloc"); err != nil {
		return 0, errNoMemory
	}
	var p uint64
	err := binary.Read(e.out, binary.LittleEndian, &p)
	return p, err
}

func (e *emu) free(p uint64) {
	e.put(byte('F'), p)
	e.reply("free")
}

func (e *emu) memInfo() (free, total uint64) { return 0, 0 }

func (e *emu) htod(dst uint64, src unsafe.Pointer, bytes uint64) error {
	e.put(byte('W'), dst, bytes)
	e.in.Write(unsafe.Slice((*byte)(src), bytes))
	return e.reply("write")
}

func (e *emu) dtoh(dst unsafe.Pointer, src uint64, bytes uint64) error {
	e.put(byte('R'), src, bytes)
	if err := e.reply("read"); err != nil {
		return err
	}
	_, err := io.ReadFull(e.out, unsafe.Slice((*byte)(dst), bytes))
	return err
}

func (e *emu) dtod(dst, src uint64, bytes uint64) error {
	e.put(byte('C'), dst, src, bytes)
	return e.reply("copy")
}

func (e *emu) memsetD32(dst uint64, v uint32, n uint64) error {
	e.put(byte('S'), dst, v, n)
	return e.reply("memset")
}

func (e *emu) launch(name string, grid [3]uint32, block, shmem uint32, args []uint64) error {
	if emuCheck != "" {
		checked.add(name)
	}
	e.put(byte('L'), uint32(len(name)), []byte(name), grid, block, shmem, uint32(len(args)), args)
	return e.reply("launch " + name)
}

func (e *emu) sgemm(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error {
	e.put(byte('G'), transA, transB, int32(m), int32(n), int32(k), a, int32(lda), b, int32(ldb), c, int32(ldc), alpha, beta)
	return e.reply("sgemm")
}

func (e *emu) gemmBF16(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error {
	e.put(byte('H'), transA, transB, int32(m), int32(n), int32(k), a, int32(lda), b, int32(ldb), c, int32(ldc), alpha, beta)
	return e.reply("gemmBF16")
}

func (e *emu) sgemmBatched(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, batch int, add bool) error {
	var beta float32
	if add {
		beta = 1
	}
	e.put(byte('B'), transA, transB, int32(m), int32(n), int32(k), a, int32(lda), b, int32(ldb), c, int32(ldc), int32(batch), beta)
	return e.reply("sgemmBatched")
}

func (e *emu) close() {
	e.in.Flush()
	e.cmd.Process.Kill()
	e.cmd.Wait()
}

// TestEmulatedConformance runs the conformance suite on the CUDA backend
// with its kernels executed by the emulator: every line of the backend
// above the device (buffers, views, the caching allocator, layouts, launch
// arguments, the GEMM's transposes, mask uploads) and every kernel's logic,
// without a GPU.
//
// Qwen3's fixtures take its per-head norms fused with RoPE (rms_norm_rope).
func TestEmulatedConformance(t *testing.T) {
	b := newEmuBackend(t)
	backendtest.Ops(t, b, backendtest.Float32)
	lc := countLaunches(b)
	modeltest.Models(t, b, backendtest.Float32)
	if lc.launches["rms_norm_rope"] == 0 {
		t.Errorf("the models' forwards never launched rms_norm_rope: %v", lc.launches)
	}
	t.Run("Ministral3", func(t *testing.T) { modeltest.Ministral(t, b, backendtest.Float32) })
}

// TestEmulatedSave: model.Save on the CUDA backend writes the CPU
// backend's files, byte for byte, and downloads its chunks into the
// saver's one host slice (ToHostInto), allocating about what a save on the
// CPU does.
func TestEmulatedSave(t *testing.T) {
	modeltest.Save(t, newEmuBackend(t))
}

// kernelsMatchCPU is the promise of the kernels (kernels/common.cuh): every op but the GEMMs and
// cross-entropy gives the CPU backend's bits, where the CPU backend's
// kernels use fused multiply-adds as the GPU's do (its AVX-512 and AVX2
// paths; the portable Go path rounds each product).
var kernelsMatchCPU = backendtest.Tolerance{Exact: true, Op: 1e-5,
	Except: []string{"MatMul", "MatMulBF16", "MatMulLarge", "MatMulNT", "MatMulAdd", "MatMulNTAdd", "CrossEntropy"}}

// TestEmulatedKernelsMatchCPUBits checks that promise on the emulator.
func TestEmulatedKernelsMatchCPUBits(t *testing.T) {
	if cpu.GEMMPath() == "portable" {
		t.Skip("the CPU backend runs its portable path (no fused multiply-adds), whose attention rounds differently by design; the bit-for-bit check needs GOEXPERIMENT=simd on AVX2/AVX-512")
	}
	b := newEmuBackend(t)
	b.encGEMMMinTokens = 0 // the exact encoder_attention: the default takes the GEMMs for EncoderAttentionLong's 197 tokens
	lc := countLaunches(b)
	backendtest.Ops(t, b, kernelsMatchCPU)
	if lc.launches["encoder_softmax"] > 0 || lc.launches["encoder_attention"] == 0 {
		t.Errorf("encoder_softmax launched %d times, encoder_attention %d: want only the exact kernel", lc.launches["encoder_softmax"], lc.launches["encoder_attention"])
	}
}

// TestEmulatedEncoderAttention runs the encoder's ops and the ViT fixture
// with each EncoderAttention path forced: the exact encoder_attention (the
// CPU backend's bits, where its kernels fuse multiply-adds as the GPU's do)
// and the batched GEMMs around encoder_softmax, whose GEMMs sum in cuBLAS's
// order (here the emulator's) and so are held to the float32 tolerance, over
// all (sequence, head) pairs at once and in groups of two
// (EncoderAttentionBatch's six pairs of 197 tokens as three groups).
func TestEmulatedEncoderAttention(t *testing.T) {
	for _, c := range []struct {
		name   string
		min    int // encGEMMMinTokens: 0, the exact kernel
		groups int // pairs per GEMM group (encScoreBytes); 0: the default bound
	}{
		{"exact", 0, 0},
		{"gemm", 1, 0},
		{"gemm in groups of 2", 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newEmuBackend(t)
			b.encGEMMMinTokens = c.min
			if c.groups > 0 {
				b.encScoreBytes = c.groups * 4 * 197 * 197
			}
			lc := countLaunches(b)
			tol := kernelsMatchCPU
			if c.min > 0 || cpu.GEMMPath() == "portable" {
				tol = backendtest.Float32
			}
			backendtest.EncoderOps(t, b, tol)
			modeltest.ViT(t, b, backendtest.Float32)
			gemm := lc.launches["encoder_softmax"] > 0
			switch {
			case gemm != (c.min > 0) || (lc.launches["encoder_attention"] > 0) != (c.min == 0):
				t.Errorf("encoder_softmax launched %d times, encoder_attention %d, with encGEMMMinTokens %d",
					lc.launches["encoder_softmax"], lc.launches["encoder_attention"], c.min)
			// Two runs each of EncoderAttentionLong (one group of its two pairs) and
			// EncoderAttentionBatch (three groups of two), two GEMMs a group.
			case c.groups > 0 && lc.batched[c.groups] != 2*2*(1+3):
				t.Errorf("batched GEMMs by batch count %v: want 16 of %d pairs", lc.batched, c.groups)
			}
		})
	}
}

// TestEmulatedEncoderAttentionDefault checks the default choice of path:
// the batched GEMMs for ViT-B/16's 197 tokens (two batched GEMMs over its 12
// heads of 64, one encoder_softmax), the exact kernel for 17 (vit-tiny's).
func TestEmulatedEncoderAttentionDefault(t *testing.T) {
	b := newEmuBackend(t)
	for _, c := range []struct {
		tokens int
		gemm   bool
	}{{197, true}, {17, false}} {
		const seqs, heads, hd = 1, 12, 64
		n := seqs * c.tokens * heads * hd
		q, k, v, out := b.Alloc(n), b.Alloc(n), b.Alloc(n), b.Alloc(n)
		lc := countLaunches(b)
		b.EncoderAttention(out, q, k, v, seqs, c.tokens, heads, hd, 0.125)
		b.dev = lc.device
		b.Free(q, k, v, out)
		want := map[string]int{"encoder_attention": 1}
		wantBatched := map[int]int{}
		if c.gemm {
			want, wantBatched = map[string]int{"encoder_softmax": 1}, map[int]int{seqs * heads: 2}
		}
		if !maps.Equal(lc.launches, want) || !maps.Equal(lc.batched, wantBatched) {
			t.Errorf("%d tokens: launches %v and batched GEMMs by batch %v; want %v and %v", c.tokens, lc.launches, lc.batched, want, wantBatched)
		}
	}
}

// TestEmulatedAttentionKernels runs the conformance suite with each
// attention kernel: attention alone (Options.Attention "rows"),
// attention_tiled (the default for heads of 128) on tiles of up to 32
// queries (the models' batches) and, with less shared memory, of 8 (and
// there the models' larger caches fall back to attention), and the batched
// GEMMs around attention_softmax (gemm), over all queries at once and in
// chunks of a few. The first three give the CPU
// backend's bits where the CPU's kernels fuse multiply-adds as the GPU's
// do; gemm sums q·k and p·v in cuBLAS's order (here the emulator's), so its
// attention is held to the float32 tolerance.
func TestEmulatedAttentionKernels(t *testing.T) {
	for _, c := range []struct {
		name   string
		maxShm int
		tile   uint64 // 0: attention_tiled off
		gemm   bool
		chunk  int // attentionGEMM's chunk (attnChunk); 0: all queries at once
	}{
		{"rows", 48 << 10, 0, false, 0},
		{"tiles of 32", 48 << 10, 32, false, 0},
		{"tiles of 8", tiledExtraShm + tiledShm(8, 8, 8), 8, false, 0}, // Ops' attention: hd 8, 8 slots
		{"gemm", 48 << 10, 0, true, 0},
		{"gemm in chunks", 48 << 10, 0, true, 4}, // Attention's 6 queries as 4+2, AttentionLong's 150 as 8 chunks of 20
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newEmuBackend(t)
			b.tiledMinHD, b.maxShm, b.gemmMinKeys = int(min(c.tile, 1)), c.maxShm, 0 // every head width the kernel takes, or off
			b.attnChunk = c.chunk
			b.encGEMMMinTokens = 0 // the encoder's exact kernel (its paths: TestEmulatedEncoderAttention)
			if c.gemm {
				b.gemmMinKeys = 1 // every call it can take
			}
			lc := countLaunches(b)
			tol := kernelsMatchCPU // the CPU's bits, where its kernels fuse multiply-adds as the GPU's do
			if c.gemm {
				tol.Except = append(slices.Clone(tol.Except), "Attention", "AttentionWindow", "AttentionLong", "AttentionLongWindow")
			}
			if cpu.GEMMPath() == "portable" {
				tol = backendtest.Float32
			}
			backendtest.Ops(t, b, tol)
			modeltest.Attention(t, b, backendtest.Float32)
			switch {
			case c.tile == 0 && len(lc.tiles) > 0:
				t.Errorf("attention_tiled ran (tiles used: %v) with it turned off", lc.tiles)
			case c.tile > 0 && lc.tiles[c.tile] == 0:
				t.Errorf("attention_tiled never ran with tiles of %d (tiles used: %v; attention launched %d times)", c.tile, lc.tiles, lc.launches["attention"])
			case c.gemm != (lc.launches["attention_softmax"] > 0):
				t.Errorf("attention_softmax launched %d times with the gemm kernel %v", lc.launches["attention_softmax"], c.gemm)
			case c.chunk > 0 && (lc.softmaxQueries[uint32(c.chunk)] == 0 || lc.softmaxQueries[2] == 0):
				t.Errorf("attention_softmax's launches by queries %v: no chunk of %d and none of 2 (Attention's 6 queries)", lc.softmaxQueries, c.chunk)
			}
		})
	}
}

// TestEmulatedStacked runs the model suite with q|k|v and gate|up stacked
// (Options.StackProjections): one cuBLAS product each, split by gather_rows.
func TestEmulatedStacked(t *testing.T) {
	b := newEmuBackend(t)
	b.stack = true
	modeltest.Models(t, b, backendtest.Float32)
}

// launchCounter counts the kernels' launches by name, attention_tiled's
// also by tile, attention_softmax's by queries.
type launchCounter struct {
	device
	launches       map[string]int
	tiles          map[uint64]int
	softmaxQueries map[uint32]int
	batched        map[int]int    // cublasSgemmBatched calls by batch count
	slices         map[uint32]int // gemm_3xtf32_split launches by their grid's z (slices of k)
}

// countLaunches has b's device counted from now on.
func countLaunches(b *Backend) *launchCounter {
	lc := &launchCounter{device: b.dev, launches: map[string]int{}, tiles: map[uint64]int{}, softmaxQueries: map[uint32]int{},
		batched: map[int]int{}, slices: map[uint32]int{}}
	b.dev = lc
	return lc
}

func (l *launchCounter) launch(name string, grid [3]uint32, block, shmem uint32, args []uint64) error {
	l.launches[name]++
	switch name {
	case "attention_tiled":
		l.tiles[args[len(args)-1]]++
	case "attention_softmax":
		l.softmaxQueries[grid[0]]++
	case "gemm_3xtf32_split":
		l.slices[grid[2]]++
	}
	return l.device.launch(name, grid, block, shmem, args)
}

func (l *launchCounter) sgemmBatched(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, batch int, add bool) error {
	l.batched[batch]++
	return l.device.sgemmBatched(transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch, add)
}

// TestAttnChunk checks attentionGEMM's chunks: attnChunk queries, fewer
// when the call has fewer, a multiple of it past attnMaxChunks chunks.
func TestAttnChunk(t *testing.T) {
	for _, c := range []struct{ chunk, tokens, want int }{
		{128, 300, 128}, {128, 128, 128}, {128, 50, 50}, {128, 2048, 256}, {64, 600, 128}, {64, 2048, 256}, {0, 300, 300}, {4, 150, 20}, {4, 6, 4},
	} {
		b := &Backend{attnChunk: c.chunk}
		if got := b.attnChunkLen(c.tokens); got != c.want {
			t.Errorf("chunks of %d, %d tokens: %d queries at a time, want %d", c.chunk, c.tokens, got, c.want)
		}
	}
}
