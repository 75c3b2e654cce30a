// Shared by every kernel of the CUDA backend (the matrix products are
// cuBLAS's). Each .cu file of this folder holds one op's kernels and
// includes this header; ptxgen (go generate ./tensor/cuda) compiles them, in
// name order, as one translation unit to PTX for compute_80 with NVRTC, the
// driver compiles that PTX for the GPU at hand (A100, H100, ...), and the
// kernel emulator (../emu) compiles the same unit with g++.
//
// Rules that keep the results reproducible and close to the CPU backend's:
// - Every output element is computed by one thread in a fixed order; every
//   reduction is a fixed tree in shared memory. No atomics on floats, so a
//   run is bit-identical to itself.
// - Element-wise arithmetic uses the explicitly rounded intrinsics
//   (__fmul_rn, __fadd_rn, ...), which the compiler may not contract into
//   fused multiply-adds, so that it rounds as the CPU backend's Go code does;
//   where the CPU kernels use fused multiply-adds (the dot products of
//   attention), so do these (fmaf). Exp is the CPU backend's Cephes expf,
//   transcribed operation by operation; GELU's float64 erf is the CPU's
//   s_erf.c, transcribed likewise (erf.cuh). No kernel whose bits must be
//   the CPU's calls a libm function (CUDA's differ from glibc's, which the
//   emulator would run, and from the CPU's: TestKernelsCallNoLibmMath). Where the CPU reduces in float64 in 16
//   partial sums (RMSNorm, the softmax normaliser), these kernels do the same
//   in the same order, so RMSNorm, SiLU, RoPE, the adds and attention give the
//   CPU backend's bits for the same inputs on amd64 (where Go rounds every
//   float32 operation; on arm64 Go may fuse them); cross-entropy's reduction
//   and cuBLAS's GEMMs sum in other orders (so does the attention through
//   cuBLAS, around attention_softmax, which calls from 256 slots take).

#ifndef MEAZO_KERNELS_COMMON_CUH
#define MEAZO_KERNELS_COMMON_CUH

#define NEG_INF __int_as_float(0xff800000)

// A kernel's dynamic shared memory (the emulator, ../emu, defines its own).
#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

// Grid-stride loops over n elements (n may exceed 2^31).
#define FOR_EACH(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// aligned reports whether p is a multiple of bytes (a power of two): whether
// a vector load or store of that size may start there.
__device__ __forceinline__ bool aligned(const void* p, unsigned long long bytes) {
    return ((unsigned long long)p & (bytes - 1)) == 0;
}

// load4 and store4 move a quad of floats as one 16-byte access (p aligned
// to 16 bytes).
__device__ __forceinline__ void load4(const float* p, float v[4]) {
    float4 f = *(const float4*)p;
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
}
__device__ __forceinline__ void store4(float* p, const float v[4]) { *(float4*)p = make_float4(v[0], v[1], v[2], v[3]); }

// square_part is partial sum p (of 16) of the squares of x [n]: elements
// p, p+16, … added in order in float64 (RMSNorm's partials, as the CPU
// backend sums them).
__device__ __forceinline__ double square_part(const float* x, int n, int p) {
    double s = 0;
    for (int j = p; j < n; j += 16) s = fma((double)x[j], (double)x[j], s); // the product is exact in float64
    return s;
}

// inv_std_of_parts is the scale of a norm over a row of n, from the 16
// float64 partial sums of its squares (RMSNorm's of x, LayerNorm's of
// x − mean): the partials added in order, the mean rounded to float32, and
// 1/sqrt(mean + eps) in float64 rounded to float32, as the CPU backend.
__device__ __forceinline__ float inv_std_of_parts(const double* part, int n, float eps) {
    double s = 0;
    for (int p = 0; p < 16; p++) s = __dadd_rn(s, part[p]);
    float variance = __double2float_rn(__ddiv_rn(s, (double)n));
    return __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)__fadd_rn(variance, eps))));
}

// max_nan is the larger of a and b, or NaN if either is: a decoder's
// attention takes its scores' max with it, so that a row with a NaN score (a
// NaN in the query's or the keys' weights) becomes NaN, as PyTorch's softmax
// and the CPU backend give it, and never the zeros of a query that sees no
// key (fmaxf passes over a NaN, so a row of NaN scores had the max −Inf).
__device__ __forceinline__ float max_nan(float a, float b) {
    return a != a || b != b ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}

// cephes_expf is the CPU backend's Exp (tensor/cpu/ops.go): Cephes expf,
// about 1 ulp, 0 below -87.3, +Inf above 88.7.
__device__ __forceinline__ float cephes_expf(float x) {
    const float hi = 88.72283f, lo = -87.33654f;
    const float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
    if (x != x) return x;
    if (x > hi) return __int_as_float(0x7f800000);
    if (x < lo) return 0.0f;
    float k = (float)floor((double)__fadd_rn(__fmul_rn(x, log2e), 0.5f));
    float r = __fsub_rn(__fsub_rn(x, __fmul_rn(k, c1)), __fmul_rn(k, c2));
    float p = 1.9875691500e-4f;
    p = __fadd_rn(__fmul_rn(p, r), 1.3981999507e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 8.3334519073e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 4.1665795894e-2f);
    p = __fadd_rn(__fmul_rn(p, r), 1.6666665459e-1f);
    p = __fadd_rn(__fmul_rn(p, r), 5.0000001201e-1f);
    p = __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(p, r), r), r), 1.0f);
    if (k > 127.0f) return __fmul_rn(__fmul_rn(p, 2.0f), __int_as_float(254 << 23));
    return __fmul_rn(p, __int_as_float(((int)k + 127) << 23));
}

#endif // MEAZO_KERNELS_COMMON_CUH
