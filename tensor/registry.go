package tensor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Options are the settings a backend is opened with. A backend ignores the
// ones that do not apply to it; the zero value is every backend's default.
// Apart from Threads and Device they are knobs for benchmarks and tests:
// the defaults were measured to be the fastest (docs/BACKENDS.md), and
// EnvOptions sets them from the environment variables that benchmark
// scripts use. The settings that change the bits are named in the opened
// backend's Arithmetic.
type Options struct {
	// Threads is the number of worker goroutines of the CPU backend
	// (0: runtime.GOMAXPROCS(0)). It never changes the bits.
	Threads int
	// Device is the GPU ordinal of a GPU backend (0: the first visible one).
	Device int
	// StackProjections has the model multiply a layer's q|k|v and gate|up
	// as one product each (Stacker). The CPU backend gives the same bits
	// (and is no faster); on the CUDA backend cuBLAS may round the wider
	// products differently, and on an H100 the model was up to 9 % slower
	// or 6 % faster by shape, so it is off by default.
	StackProjections bool

	// GEMMPath forces the CPU backend's GEMM micro kernels: "avx512",
	// "avx2", "neon" or "portable" ("" or "auto": the fastest the CPU has).
	// Each path rounds its own way. The path is the process's: opening a
	// CPU backend with it set changes it for every CPU backend.
	GEMMPath string
	// GEMMTile fixes the CPU GEMM's tallest row tile (4, 6, 8 or 12, as the
	// path has them; 0: calibrated at first use). It never changes the
	// bits; like GEMMPath it is the process's.
	GEMMTile int

	// Attention forces the CUDA backend's attention path wherever it can
	// run: "rows" (attention, a block per query), "tiled"
	// (attention_tiled) or "gemm" (batched GEMMs around
	// attention_softmax); "" or "auto": chosen by length and head width.
	// "gemm" rounds differently from the other two.
	Attention string
	// AttentionChunk is how many queries the CUDA backend's batched-GEMM
	// attention takes at a time (0: the default, 128; AllQueries: all at
	// once, the whole square of scores). cuBLAS may round other shapes
	// differently.
	AttentionChunk int
	// SyncUploads has the CUDA backend upload synchronously, without its
	// pinned staging buffer (slower; the same bits).
	SyncUploads bool
	// BF16Products has the CUDA backend multiply by bfloat16-stored weights
	// on the tensor cores: the activations rounded to bfloat16, the
	// products summed in float32 (cublasGemmEx), as PyTorch multiplies a
	// bfloat16 model. Other products, every product of float32 weights and
	// full-parameter ZO's perturbed products stay float32 (so it is for
	// frozen weights); the CPU backend ignores it. Unlike the other knobs
	// it is a user's setting too: meazo-train's model.bf16_products.
	BF16Products bool
	// PairedProducts has the CUDA backend run full-parameter ZO's two
	// products by the + and − variants' matrices of a direction as one
	// batched cuBLAS call (cublasSgemmBatched) instead of two: twice the
	// tiles in a launch where a variant's rows are few. cuBLAS may round a
	// batched product otherwise than the same product alone.
	PairedProducts bool
	// TF32x3 has the CUDA backend multiply float32 matrices on Hopper's
	// tensor cores (H100, H200) where the shapes allow: each operand split
	// into two TF32 parts, three tensor-core products a term, the sums
	// rounded to nearest in float32 every 32 terms (gemm_3xtf32); on an
	// H200 faster than SGEMM on every shape it takes, at a lower error.
	// Other GPUs refuse it. Off by default until its last sanitizer checks
	// have run (docs/BACKENDS.md); the CPU backend ignores it.
	TF32x3 bool
	// TF32x3Auto is TF32x3 where the GPU is a Hopper and SGEMM elsewhere,
	// without an error (MEAZO_CUDA_3XTF32=auto).
	TF32x3Auto bool
	// TF32x3AllShapes has TF32x3 take every product it can, also those
	// whose grid would leave much of the GPU idle in its last wave (which
	// it otherwise leaves to SGEMM): to measure the rule.
	TF32x3AllShapes bool
}

// AllQueries is the Options.AttentionChunk that takes all of a call's
// queries at once.
const AllQueries = -1

// Opener makes a backend, or says in one line why it cannot (a missing
// driver library, no device, …).
type Opener func(Options) (Backend, error)

type registered struct {
	name     string
	priority int
	open     Opener
}

var (
	registryMu sync.Mutex
	registry   []registered
)

// Register makes a backend available to Open under name. Backends register
// themselves in an init function, so a program has the backends whose
// packages it imports (package tensor/backends imports all of them). "auto"
// tries the registered backends from the highest priority down.
func Register(name string, priority int, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || name == "auto" || slices.ContainsFunc(registry, func(r registered) bool { return r.name == name }) {
		panic(fmt.Sprintf("tensor: backend %q registered twice or reserved", name))
	}
	registry = append(registry, registered{name, priority, open})
	slices.SortStableFunc(registry, func(a, b registered) int { return b.priority - a.priority })
}

// Names lists the registered backends in the order "auto" tries them.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for _, r := range registry {
		names = append(names, r.name)
	}
	return names
}

// Open returns the backend registered as name. "auto" (or "") opens the
// first registered backend that opens, in priority order, and reports in
// skipped why each one before it could not be used; for any other name
// skipped is nil. Where none opens, the error gives the last one's reason
// first: the fallback (the CPU) is what a machine without a GPU meant to
// run, and its reason (a setting it refuses) would read as a footnote to
// the GPU's missing library.
func Open(name string, o Options) (b Backend, skipped []error, err error) {
	registryMu.Lock()
	regs := slices.Clone(registry)
	registryMu.Unlock()
	if name == "" || name == "auto" {
		for _, r := range regs {
			b, err := r.open(o)
			if err == nil {
				return b, skipped, nil
			}
			skipped = append(skipped, named(r.name, err))
		}
		slices.Reverse(skipped)
		return nil, nil, fmt.Errorf("no backend could be opened: %w", errors.Join(skipped...))
	}
	for _, r := range regs {
		if r.name == name {
			b, err := r.open(o)
			if err != nil {
				return nil, nil, named(name, err)
			}
			return b, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("unknown backend %q (have auto, %s)", name, strings.Join(Names(), ", "))
}

// named prefixes err with the backend's name unless it already starts so.
func named(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
