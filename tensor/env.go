package tensor

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// EnvOptions returns o with the settings that environment variables give.
// They are for benchmark scripts and tests (scripts/gpu/session.sh runs the
// same binaries with each setting); a program that opens a backend by name
// (tensor/backends.Open, OpenWith) applies them over the options it has
// from its own configuration (meazo-train's model.bf16_products), and so do
// the CUDA backend's GPU tests. No backend reads them itself.
//
// This is the one list of the module's MEAZO_ environment variables
// (docs/BACKENDS.md, "Settings and environment variables", keeps the same
// list; a test checks that the Go code reads no other). Those that set Options:
//
//	MEAZO_GEMM=avx512|avx2|neon|portable|auto  Options.GEMMPath (cpu)
//	MEAZO_GEMM_TILE=4|6|8|12|auto              Options.GEMMTile (cpu)
//	MEAZO_CUDA_STACK=1|0                       Options.StackProjections
//	MEAZO_CUDA_ATTENTION=rows|tiled|gemm|auto  Options.Attention (cuda)
//	MEAZO_CUDA_ATTN_CHUNK=N                    Options.AttentionChunk (cuda; 0: AllQueries)
//	MEAZO_CUDA_UPLOADS=sync|async              Options.SyncUploads (cuda)
//	MEAZO_CUDA_BF16_PRODUCTS=1|0               Options.BF16Products (cuda; model.bf16_products)
//	MEAZO_CUDA_PAIRED=1|0                      Options.PairedProducts (cuda)
//	MEAZO_CUDA_3XTF32=1|auto|all|0             Options.TF32x3, TF32x3Auto, TF32x3AllShapes (cuda)
//
// and those that do not:
//
//	MEAZO_CUDA_LIB_PATH=DIR  a directory the CUDA backend searches first for
//	                         libcuda.so.1 and libcublas (read when it loads them)
//	MEAZO_SHARED=DIR         the shared fixtures that tests read (internal/fixture)
//	MEAZO_REQUIRE_NVRTC=1, MEAZO_REQUIRE_CUDA_EMU=1, MEAZO_REQUIRE_CUBLAS=1,
//	MEAZO_REQUIRE_PEFT=1     a test that needs NVRTC, the kernel emulator,
//	                         cuBLAS or the real PEFT fails without it instead
//	                         of skipping (CI)
//	MEAZO_CUDA_EMU_CHECK=race|memory  the CUDA backend's emulated tests run
//	                         on the kernel emulator built as that checker
//	                         (make test-kernel-checks)
//	MEAZO_PYTHON=PATH        the python3 with python3-torch that the real-PEFT
//	                         tests run (internal/fixture; /usr/bin/python3)
//	MEAZO_TRAIN=PATH         the meazo-train that meazo-sweep and
//	                         scripts/sweep.sh run (docs/SWEEPS.md)
//	MEAZO_PLOT=PATH          the meazo-plot that scripts/sweep.sh runs
//
// An empty variable counts as unset. A value the variable does not take is
// an error that names the variable; the backend that a setting is for
// checks, when it opens, what cannot be known here (whether this CPU has
// that GEMM path or tile).
func EnvOptions(o Options) (Options, error) {
	for _, v := range envOptions {
		s := os.Getenv(v.name)
		if s == "" {
			continue
		}
		if err := v.set(&o, s); err != nil {
			return o, fmt.Errorf("$%s=%q: %w", v.name, s, err)
		}
	}
	return o, nil
}

// envOptions are the variables EnvOptions reads, each with how it sets
// Options from a non-empty value.
var envOptions = []struct {
	name string
	set  func(o *Options, v string) error
}{
	{"MEAZO_GEMM", func(o *Options, v string) error {
		return oneOf(&o.GEMMPath, v, "avx512", "avx2", "neon", "portable", "auto")
	}},
	{"MEAZO_GEMM_TILE", func(o *Options, v string) error {
		if v == "auto" {
			o.GEMMTile = 0
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("not a tile height in rows (4, 6, 8, 12) or auto")
		}
		o.GEMMTile = n
		return nil
	}},
	{"MEAZO_CUDA_STACK", func(o *Options, v string) error { return either(&o.StackProjections, v, "1", "0") }},
	{"MEAZO_CUDA_ATTENTION", func(o *Options, v string) error { return oneOf(&o.Attention, v, "rows", "tiled", "gemm", "auto") }},
	{"MEAZO_CUDA_ATTN_CHUNK", func(o *Options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("not a number of queries (0: all at once)")
		}
		o.AttentionChunk = n
		if n == 0 {
			o.AttentionChunk = AllQueries
		}
		return nil
	}},
	{"MEAZO_CUDA_UPLOADS", func(o *Options, v string) error { return either(&o.SyncUploads, v, "sync", "async") }},
	{"MEAZO_CUDA_BF16_PRODUCTS", func(o *Options, v string) error { return either(&o.BF16Products, v, "1", "0") }},
	{"MEAZO_CUDA_PAIRED", func(o *Options, v string) error { return either(&o.PairedProducts, v, "1", "0") }},
	{"MEAZO_CUDA_3XTF32", func(o *Options, v string) error {
		var mode string
		if err := oneOf(&mode, v, "1", "auto", "all", "0"); err != nil {
			return err
		}
		o.TF32x3, o.TF32x3Auto, o.TF32x3AllShapes = mode == "1" || mode == "all", mode == "auto", mode == "all"
		return nil
	}},
}

// either sets *dst to true for v == yes and to false for v == no.
func either(dst *bool, v, yes, no string) error {
	if v != yes && v != no {
		return fmt.Errorf("want %s or %s", yes, no)
	}
	*dst = v == yes
	return nil
}

// oneOf sets *dst to v if v is one of values.
func oneOf(dst *string, v string, values ...string) error {
	if !slices.Contains(values, v) {
		return fmt.Errorf("want one of %s", strings.Join(values, ", "))
	}
	*dst = v
	return nil
}
