package cuda

import (
	_ "embed"
	"fmt"
	"math"
)

//go:generate go run ./internal/ptxgen -in kernels -out kernels.ptx
//go:generate go run ./internal/ptxgen -hopper -in kernels_sm90a -out kernels_sm90a.ptx

// kernelsPTX is the kernels of the folder kernels/ (one op's kernels per .cu
// file) compiled as one unit by NVRTC 11.8 for compute_80 (ptxgen).
//
//go:embed kernels.ptx
var kernelsPTX string

// hopperPTX is the kernels of kernels_sm90a/ (wgmma: Hopper's tensor-core
// instruction) compiled for compute_90 and retargeted to sm_90a (ptxgen
// -hopper): a module of their own, which only an sm_90 GPU can load, loaded
// only for Options.TF32x3.
//
//go:embed kernels_sm90a.ptx
var hopperPTX string

// param is the kind of one kernel parameter, as the PTX declares it.
type param byte

const (
	ptr param = iota // a device pointer (.u64)
	i64              // long long (.u64)
	i32              // int (.u32)
	f32              // float (.f32)
	f64              // double (.f64)
)

// kernelParams lists every kernel of kernels/ with the kinds of its
// parameters, in order. launch checks each call against it, a test checks
// it against the PTX, the GPU loads each kernel named here, and the
// emulator's tests dispatch launches by these names.
var kernelParams = map[string][]param{
	"add":               {ptr, ptr, i64},
	"add_scaled":        {ptr, ptr, f32, i64},
	"silu_mul":          {ptr, ptr, i64},
	"bf16_to_f32":       {ptr, ptr, i64},
	"f32_to_bf16":       {ptr, ptr, i64},
	"gather_rows":       {ptr, ptr, i32, ptr},
	"gather_rows_bf16":  {ptr, ptr, i32, ptr},
	"rms_norm":          {ptr, ptr, ptr, i32, f32},
	"rms_norm_narrow":   {ptr, ptr, ptr, i32, i32, f32},
	"rms_norm_rope":     {ptr, ptr, i64, i32, i32, f32, ptr, ptr, i32},
	"rope":              {ptr, i64, i32, i32, ptr, ptr, i32},
	"store_kv":          {ptr, ptr, ptr, ptr, i32, i32, i32, i32, i32, i32},
	"attention":         {ptr, ptr, ptr, ptr, ptr, i32, i32, i32, i32, i32, i32, i32, f32},
	"attention_tiled":   {ptr, ptr, ptr, ptr, ptr, i32, i32, i32, i32, i32, i32, i32, f32, i32},
	"attention_softmax": {ptr, ptr, i32, i32, i32, i32, i32, i32, f32},
	"cross_entropy":     {ptr, ptr, i32, ptr, ptr},
	"argmax":            {ptr, ptr, i32},
	// OPT's blocks (elementwise.go).
	"layer_norm":        {ptr, ptr, ptr, ptr, i32, f32},
	"add_bias":          {ptr, ptr, i32, i64},
	"add_bias_residual": {ptr, ptr, ptr, i32, i64},
	"relu":              {ptr, i64},
	// ViT's encoder (encoder.go).
	"gelu":              {ptr, i64},
	"add_bias_gelu":     {ptr, ptr, i32, i64},
	"encoder_attention": {ptr, ptr, ptr, ptr, i32, i32, i32, f32},
	"encoder_softmax":   {ptr, i32, f32},
	// Full-parameter ZO (trainer.go): the noise contract alone (tests),
	// perturbed copies and rows, the in-place update.
	"noise_fill":         {ptr, i64, i64, i32, i32, i32, f64, i64},
	"noise_bits":         {ptr, i64, i64, i32, i32, i64},
	"noise_normal_words": {ptr, ptr, i64},
	"perturb_copy":       {ptr, ptr, ptr, i32, i64, i64, i32, i32, i32, f64, i64, f64, f64},
	"perturb_rows":       {ptr, ptr, i32, i32, ptr, i64, i32, i32, i32, f64, i64, f64},
	"zo_update": {ptr, ptr, ptr, ptr, ptr, i32, i32, i32, i64, i64, i32, f64, f64, f64, f64, f64, f64, f64, f64,
		i64, i32, i32},
}

// hopperParams is kernelParams for the kernels of kernels_sm90a/ (the
// module hopperPTX), which a GPU loads for Options.TF32x3 only.
// gemm_3xtf32_serial and gemm_3xtf32_every2 are there for
// dev/cuda/gemm_wgmma.cu's comparison (and TestEmulated3xTF32Variants); the
// backend launches gemm_3xtf32, or with k split in slices
// gemm_3xtf32_split and gemm_3xtf32_reduce (matmul.go's split3xTF32).
var hopperParams = map[string][]param{
	"gemm_3xtf32":        {ptr, ptr, ptr, i32, i32, i32, i32, i32, f32, i32, i32},
	"gemm_3xtf32_serial": {ptr, ptr, ptr, i32, i32, i32, i32, i32, f32, i32, i32},
	"gemm_3xtf32_every2": {ptr, ptr, ptr, i32, i32, i32, i32, i32, f32, i32, i32},
	"gemm_3xtf32_split":  {ptr, ptr, ptr, i32, i32, i32, i32, i32, i32},
	"gemm_3xtf32_reduce": {ptr, ptr, i32, i32, i32, i32, i32, f32},
}

// Arguments of launch, typed so that each matches its PTX parameter.
type (
	devPtr uint64
	i64Arg int64
	i32Arg int32
	f32Arg float32
	f64Arg float64
)

func kindOf(a any) (param, uint64) {
	switch v := a.(type) {
	case devPtr:
		return ptr, uint64(v)
	case i64Arg:
		return i64, uint64(v)
	case i32Arg:
		return i32, uint64(uint32(v))
	case f32Arg:
		return f32, uint64(math.Float32bits(float32(v)))
	case f64Arg:
		return f64, math.Float64bits(float64(v))
	}
	panic(fmt.Sprintf("cuda: kernel argument of type %T", a))
}

// launch runs kernel name on grid × block threads with shmem bytes of
// dynamic shared memory, on the default stream.
func (b *Backend) launch(name string, grid [3]uint32, block uint32, shmem uint32, args ...any) {
	want, ok := kernelParams[name]
	if !ok {
		want, ok = hopperParams[name]
	}
	if !ok || len(args) != len(want) {
		panic(fmt.Sprintf("cuda: kernel %s launched with %d arguments, declared %d", name, len(args), len(want)))
	}
	slots := make([]uint64, len(args))
	for i, a := range args {
		k, v := kindOf(a)
		if k != want[i] {
			panic(fmt.Sprintf("cuda: kernel %s argument %d has the wrong kind", name, i))
		}
		slots[i] = v
	}
	if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
		return // nothing to do: an empty grid is not a launch
	}
	if err := b.dev.launch(name, grid, block, shmem, slots); err != nil {
		b.fail(err)
	}
}

// blocks1D is the grid of a grid-stride loop over n elements.
func blocks1D(n int) [3]uint32 {
	const threads = 256
	g := min((n+threads-1)/threads, 65535*8)
	return [3]uint32{uint32(max(g, 1)), 1, 1}
}
