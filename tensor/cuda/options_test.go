package cuda

import (
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor"
)

// TestOptions checks how Options set the backend's choice of attention
// kernel, its chunks and stacking, and that the description (and with it
// Arithmetic) names every setting that changes the bits.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		name           string
		o              Options
		minHD, minKeys int
		encMin         int // encGEMMMinTokens
		chunk          int
		stack          bool
		desc           string // "": the description names no setting
	}{
		{"default", Options{}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, false, ""},
		{"auto", Options{Attention: "auto"}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, false, ""},
		{"rows", Options{Attention: "rows"}, 0, 0, 0, defaultAttnChunk, false, "; attention kernel: rows (MEAZO_CUDA_ATTENTION)"},
		{"tiled", Options{Attention: "tiled"}, 1, 0, 0, defaultAttnChunk, false, "; attention kernel: tiled (MEAZO_CUDA_ATTENTION)"},
		{"gemm", Options{Attention: "gemm"}, 128, 1, 1, defaultAttnChunk, false, "; attention kernel: gemm (MEAZO_CUDA_ATTENTION)"},
		{"chunks of 64", Options{AttentionChunk: 64}, 128, 256, defaultEncGEMMMinTokens, 64, false, "; attention chunks of 64 queries (MEAZO_CUDA_ATTN_CHUNK)"},
		{"all queries", Options{AttentionChunk: tensor.AllQueries}, 128, 256, defaultEncGEMMMinTokens, 0, false, "; attention chunks of 0 queries (MEAZO_CUDA_ATTN_CHUNK)"},
		{"stacked", Options{StackProjections: true}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, true, "; projections stacked (MEAZO_CUDA_STACK)"},
		{"synchronous uploads: the GPU's description", Options{SyncUploads: true}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, false, ""},
		{"bfloat16 products", Options{BF16Products: true}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, false,
			"; bfloat16 weights multiplied in bfloat16 on the tensor cores (model.bf16_products or MEAZO_CUDA_BF16_PRODUCTS)"},
		{"paired products", Options{PairedProducts: true}, 128, 256, defaultEncGEMMMinTokens, defaultAttnChunk, false,
			"; a direction's perturbed products paired (MEAZO_CUDA_PAIRED)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := newBackend(nil, "gpu", 48<<10, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if b.tiledMinHD != c.minHD || b.gemmMinKeys != c.minKeys || b.encGEMMMinTokens != c.encMin || b.attnChunk != c.chunk ||
				b.StackProjections() != c.stack {
				t.Errorf("tiledMinHD %d, gemmMinKeys %d, encGEMMMinTokens %d, attnChunk %d, stacked %v; want %d, %d, %d, %d, %v",
					b.tiledMinHD, b.gemmMinKeys, b.encGEMMMinTokens, b.attnChunk, b.StackProjections(), c.minHD, c.minKeys, c.encMin, c.chunk, c.stack)
			}
			if b.BF16Products() != c.o.BF16Products {
				t.Errorf("BF16Products() = %v, opened with %v", b.BF16Products(), c.o.BF16Products)
			}
			if b.Describe() != "gpu"+c.desc || b.Arithmetic() != c.desc {
				t.Errorf("description %q, arithmetic %q; want %q and %q", b.Describe(), b.Arithmetic(), "gpu"+c.desc, c.desc)
			}
		})
	}
	for _, o := range []Options{{Attention: "fast"}, {AttentionChunk: -2}} {
		_, err := newBackend(nil, "gpu", 48<<10, o)
		if _, openErr := Open(o); err == nil || openErr == nil || !strings.HasPrefix(openErr.Error(), "cuda: attention") {
			t.Errorf("options %+v: newBackend's error %v, Open's %v; want both to refuse them", o, err, openErr)
		}
	}
}

// TestOptionsOf checks that every setting of tensor.Options that is the
// CUDA backend's reaches its Options (a backend opened by name).
func TestOptionsOf(t *testing.T) {
	o := tensor.Options{Threads: 3, Device: 2, StackProjections: true, GEMMPath: "avx2", GEMMTile: 8,
		Attention: "gemm", AttentionChunk: 64, SyncUploads: true, BF16Products: true, PairedProducts: true, TF32x3: true,
		TF32x3AllShapes: true}
	want := Options{Device: 2, StackProjections: true, Attention: "gemm", AttentionChunk: 64, SyncUploads: true,
		BF16Products: true, PairedProducts: true, TF32x3: true, TF32x3AllShapes: true}
	if got := optionsOf(o); got != want {
		t.Errorf("optionsOf(%+v) = %+v, want %+v", o, got, want)
	}
}

// hopperFake is a device that says it has loaded kernels_sm90a (its other
// methods are nil's: newBackend calls none of them).
type hopperFake struct {
	device
	loaded bool
}

func (h hopperFake) hasHopperKernels() bool { return h.loaded }
func (h hopperFake) multiprocessors() int   { return 132 }

// TestTF32x3NeedsHopper checks that Options.TF32x3 opens a backend only on a
// device with kernels_sm90a loaded, names itself in the arithmetic (every
// shape or only those that fill the device's multiprocessors, which it
// then knows), and is refused elsewhere (a device without them: another
// GPU) with a message that names the setting.
func TestTF32x3NeedsHopper(t *testing.T) {
	for _, c := range []struct {
		all   bool
		sms   int
		arith string
	}{
		{false, 132, "; float32 products as 3xTF32 on the tensor cores where their grid fills the GPU (MEAZO_CUDA_3XTF32), by its 132 multiprocessors"},
		{true, 0, "; float32 products as 3xTF32 on the tensor cores, every shape (MEAZO_CUDA_3XTF32=all)"},
	} {
		b, err := newBackend(hopperFake{loaded: true}, "gpu", 48<<10, Options{TF32x3: true, TF32x3AllShapes: c.all})
		if err != nil {
			t.Fatal(err)
		}
		if b.Arithmetic() != c.arith || !b.tf32x3 || b.sms != c.sms {
			t.Errorf("all shapes %v: arithmetic %q, tf32x3 %v, sms %d; want %q, true, %d", c.all, b.Arithmetic(), b.tf32x3, b.sms, c.arith, c.sms)
		}
	}
	if _, err := Open(Options{TF32x3AllShapes: true}); err == nil || !strings.Contains(err.Error(), "TF32x3AllShapes without TF32x3") {
		t.Errorf("TF32x3AllShapes without TF32x3: %v, want it refused before the GPU", err)
	}
	for _, dev := range []device{nil, hopperFake{loaded: false}} {
		if _, err := newBackend(dev, "gpu", 48<<10, Options{TF32x3: true}); err == nil || !strings.Contains(err.Error(), "MEAZO_CUDA_3XTF32") {
			t.Errorf("device %T: err %v, want a refusal naming MEAZO_CUDA_3XTF32", dev, err)
		}
	}
	if b, err := newBackend(nil, "gpu", 48<<10, Options{}); err != nil || b.tf32x3 {
		t.Errorf("default options: err %v, tf32x3 %v; want SGEMM without a Hopper device", err, b != nil && b.tf32x3)
	}
	if _, err := Open(Options{TF32x3: true, TF32x3Auto: true}); err == nil || !strings.Contains(err.Error(), "one or the other") {
		t.Errorf("TF32x3 and TF32x3Auto: %v, want them refused together before the GPU", err)
	}
}

// TestTF32x3Auto checks MEAZO_CUDA_3XTF32=auto: on a device with
// kernels_sm90a the backend TF32x3 gives, with its Arithmetic (the same
// bits); on others (another GPU: the kernels not loaded, or no Hopper
// device at all) SGEMM without an error, and the Arithmetic of the default.
func TestTF32x3Auto(t *testing.T) {
	for _, c := range []struct {
		name   string
		dev    device
		tf32x3 bool
	}{
		{"a Hopper GPU", hopperFake{loaded: true}, true},
		{"another GPU", hopperFake{loaded: false}, false},
		{"a device without Hopper's kernels", nil, false},
	} {
		auto, err := newBackend(c.dev, "gpu", 48<<10, Options{TF32x3Auto: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := newBackend(c.dev, "gpu", 48<<10, Options{TF32x3: c.tf32x3})
		if err != nil {
			t.Fatal(err)
		}
		if auto.tf32x3 != c.tf32x3 || auto.sms != want.sms || auto.Arithmetic() != want.Arithmetic() || auto.Describe() != want.Describe() {
			t.Errorf("%s: tf32x3 %v, sms %d, arithmetic %q; want %v, %d, %q", c.name, auto.tf32x3, auto.sms, auto.Arithmetic(), c.tf32x3, want.sms, want.Arithmetic())
		}
	}
}

// TestFills3xTF32 checks which grids of gemm_3xtf32's 128 × 128 blocks, one
// a multiprocessor, are left to it on a GPU of 132 (an H100 or H200): those
// that keep at least 75 % of the multiprocessors busy over their waves.
// The shapes are the models' (docs/bench/2026-11-30-h200's tcbench).
func TestFills3xTF32(t *testing.T) {
	for _, c := range []struct {
		name         string
		rows, n, sms int
		want         bool
	}{
		{"Llama q at 1,024 rows: 128 blocks, one wave of 97 %", 1024, 2048, 132, true},
		{"Llama q at 1,280 rows (the 8x80 step's two variants): 160 blocks in two waves, 61 %", 1280, 2048, 132, false},
		{"Llama k at 1,024 rows: 32 blocks, 24 %", 1024, 512, 132, false},
		{"Llama gate at 1,280 rows: 640 blocks in five waves, 97 %", 1280, 8192, 132, true},
		{"Qwen3 k at 4,800 rows: 304 blocks in three waves, 77 %", 4800, 1024, 132, true},
		{"Qwen3 o at 1,280 rows: 80 blocks, 61 %", 1280, 1024, 132, false},
		{"the LM head at the supervised rows: 1,002 blocks in eight waves, 95 %", 48, 128256, 132, true},
		{"exactly 75 %: 99 blocks of 132", 99 * 128, 128, 132, true},
		{"just under: 98 blocks", 98 * 128, 128, 132, false},
		{"an unknown GPU: every shape", 1280, 2048, 0, true},
	} {
		if got := fills3xTF32(c.rows, c.n, c.sms); got != c.want {
			t.Errorf("%s: fills3xTF32(%d, %d, %d) = %v, want %v", c.name, c.rows, c.n, c.sms, got, c.want)
		}
	}
}

// TestSplit3xTF32 checks how many slices of k split3xTF32 gives a
// product: one where its grid fills the GPU (fills3xTF32), else the fewest
// up to 4 whose grid of blocks × slices does, each slice at least 16 tiles
// of 32 of k; where none does, one if the grid alone keeps 60 % of the GPU
// busy, else 0 (SGEMM). The shapes are the models' at a ZO step of 8×80
// (1,280 rows) and 640 rows on an H100 or H200 (132).
func TestSplit3xTF32(t *testing.T) {
	for _, c := range []struct {
		name            string
		rows, n, k, sms int
		want            int
	}{
		{"Llama q at 1,024 rows: 128 blocks, 97 %", 1024, 2048, 2048, 132, 1},
		{"Llama q/o at 1,280 rows: 160 blocks (61 %), 320 in 2 slices (81 %)", 1280, 2048, 2048, 132, 2},
		{"Llama down at 1,280 rows: 160 blocks, k = 8,192", 1280, 2048, 8192, 132, 2},
		{"Llama k/v at 1,280 rows: 40 blocks (30 %), 80 (61 %), 120 in 3 slices (91 %)", 1280, 512, 2048, 132, 3},
		{"Llama gate at 1,280 rows: 640 blocks, 97 %", 1280, 8192, 2048, 132, 1},
		{"Llama q/o at 640 rows: 80 blocks (61 %), 160 (61 %), 240 in 3 slices (91 %)", 640, 2048, 2048, 132, 3},
		{"Llama k/v at 640 rows: 20 blocks; 80 in 4 slices (61 %): none", 640, 512, 2048, 132, 0},
		{"Qwen3 q at 1,280 rows: 160 blocks, k = 1,024: 2 slices of 16 tiles", 1280, 2048, 1024, 132, 2},
		{"Qwen3 k/v at 1,280 rows: 80 blocks (61 %), 160 in 2 slices (61 %), 3 slices would be 10 tiles: unsplit", 1280, 1024, 1024, 132, 1},
		{"Qwen3 q at 640 rows: 80 blocks, 160 in 2 slices, 61 % either way: unsplit", 640, 2048, 1024, 132, 1},
		{"Qwen3 k/v at 640 rows: 40 blocks (30 %), 80 in 2 slices (61 %): none", 640, 1024, 1024, 132, 0},
		{"Qwen3 o at 1,280 rows: 80 blocks, 240 in 3 slices", 1280, 1024, 2048, 132, 3},
		{"Qwen3 down at 1,280 rows: 80 blocks, k = 3,072", 1280, 1024, 3072, 132, 3},
		{"Qwen3 gate/up at 1,280 rows: 240 blocks, 91 %", 1280, 3072, 1024, 132, 1},
		{"TestGemm3xTF32OnGPU's 1280x1280x1024: 100 blocks, 76 %", 1280, 1280, 1024, 132, 1},
		{"TestGemm3xTF32OnGPU's 896x1024x1024: 56 blocks (42 %), 112 in 2 slices (85 %)", 896, 1024, 1024, 132, 2},
		{"TestGemm3xTF32OnGPU's 300x2048x1024: 48 blocks, 96 (73 %), 3 slices of 10 tiles", 300, 2048, 1024, 132, 0},
		{"one block on 132: 4 slices are 3 %", 128, 128, 8192, 132, 0},
		{"one block on 4: 3 slices of 16 tiles, 75 %", 128, 128, 1536, 4, 3},
		{"one block on 4, 64 tiles: 3 slices (75 %) before 4", 128, 128, 2048, 4, 3},
		{"one block on 4, 47 tiles: 3 slices of 15 too short", 128, 128, 1504, 4, 0},
		{"two blocks on 4: 2 slices of 16 tiles", 256, 128, 1024, 4, 2},
		{"two blocks on 4, 31 tiles: slices of 15", 256, 128, 992, 4, 0},
		{"six blocks on 10, 31 tiles: no slices, 60 % unsplit", 6 * 128, 128, 992, 10, 1},
		{"five blocks on 10, 31 tiles: 50 %", 5 * 128, 128, 992, 10, 0},
		{"seven blocks on 10, 64 tiles: 70 %; 28 in 4 slices (93 %) before unsplit", 7 * 128, 128, 2048, 10, 4},
		{"an unknown GPU (the emulator, MEAZO_CUDA_3XTF32=all): one slice", 1280, 2048, 2048, 0, 1},
	} {
		if got := split3xTF32(c.rows, c.n, c.k, c.sms); got != c.want {
			t.Errorf("%s: split3xTF32(%d, %d, %d, %d) = %d, want %d", c.name, c.rows, c.n, c.k, c.sms, got, c.want)
		}
	}
}

// TestFits3xTF32 checks which products gemm_3xtf32 takes: k a multiple of
// 32, n and the rows' distance even, x and W 16-byte aligned, y 8-byte;
// added products and blocks of columns too.
func TestFits3xTF32(t *testing.T) {
	for _, c := range []struct {
		name            string
		y, x, w         uint64
		rows, n, ldy, k int
		want            bool
	}{
		{"a projection", 256, 512, 1024, 300, 2048, 2048, 1024, true},
		{"a block of columns", 256, 512, 1024, 300, 512, 2048, 1024, true},
		{"rows an odd number apart", 256, 512, 1024, 300, 512, 2047, 1024, false},
		{"rows closer than n", 256, 512, 1024, 300, 512, 256, 1024, false},
		{"k = 16 (a LoRA rank)", 256, 512, 1024, 300, 2048, 2048, 16, false},
		{"k = 1,000", 256, 512, 1024, 300, 2048, 2048, 1000, false},
		{"odd n", 256, 512, 1024, 300, 2047, 2047, 1024, false},
		{"x 8-byte aligned", 256, 520, 1024, 300, 2048, 2048, 1024, false},
		{"W 4-byte aligned", 256, 512, 1028, 300, 2048, 2048, 1024, false},
		{"y 8-byte aligned", 264, 512, 1024, 300, 2048, 2048, 1024, true},
		{"y 4-byte aligned", 260, 512, 1024, 300, 2048, 2048, 1024, false},
		{"rows past the grid", 256, 512, 1024, 65535*128 + 1, 2048, 2048, 1024, false},
	} {
		if got := fits3xTF32(c.y, c.x, c.w, c.rows, c.n, c.ldy, c.k); got != c.want {
			t.Errorf("%s: fits3xTF32 = %v, want %v", c.name, got, c.want)
		}
	}
}
