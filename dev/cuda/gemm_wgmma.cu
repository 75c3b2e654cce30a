// gemm_wgmma: float32-accurate matrix products on Hopper's tensor cores
// (3xTF32 through wgmma, with the accumulation rounded on the CUDA cores),
// an experiment of the CUDA backend kept here as scratch space (see
// README.md). NOT YET RUN ON A GPU: written on a machine without one, from
// the PTX ISA's descriptions of wgmma and its shared-memory layouts; the
// first GPU session that has one runs it (scripts/gpu/session.sh OUT
// tcgemm), and this comment is to say what it showed.
//
// y [M][N] = x [M][K] · Wᵀ for a row-major W [N][K], the product every
// projection of the models is. Each float32 input is split into a TF32 part
// and a TF32 remainder (hi = rna(v), lo = rna(v − hi)) and each product taken
// as lo·hi + hi·lo + hi·hi on the tensor cores. What makes it float32-accurate
// where dev/cuda/gemm_tf32x3.cu was not (12-100× SGEMM's error on an H100):
// the tensor cores add into their accumulator with truncation (25 fractional
// bits aligned to the largest term, the sum truncated to float32), a bias
// that grows with k. Here the tensor-core accumulator starts from zero on
// every tile of k (32 values: 12 wgmma) and is then added, rounded to
// nearest, to a float32 sum on the CUDA cores. A simulation of Hopper's
// tensor-core arithmetic (dev/cuda/tcsim, the model of Microsoft's MMA-Sim,
// which reproduces gemm_tf32x3's measured errors: 7.2e-6 at k = 1,024 against
// 7e-6 measured, 5.8e-5 at k = 8,192 against 5.7e-5) gives this scheme an rms
// error of 0.25-0.47× a float32 FMA chain's (SGEMM's) at k = 1,024-8,192.
//
// Build and run on a GPU machine (CUDA 12.3 or later for sm_90a):
//
//	nvcc -O3 -std=c++17 -arch=sm_90a -o gemm_wgmma dev/cuda/gemm_wgmma.cu -lcublas
//	./gemm_wgmma            # correctness, then the models' shapes against cuBLAS
//	./gemm_wgmma --check    # correctness alone (for compute-sanitizer)
//
// (-DNO_EMULATION leaves cuBLAS's emulation out, for a cuBLAS whose headers
// say 12.9 but lack it.)
//
// The harness compares, on each of the models' projection shapes and in the
// same run: this kernel (promoting every tile, and every second tile),
// cuBLAS SGEMM, cuBLAS TF32 and, where cuBLAS has it (12.9 and later),
// cuBLAS's own float32 emulation on bfloat16 tensor cores
// (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, forced with the EAGER strategy) —
// time and error against float64.
#ifndef __CUDACC_RTC__ // NVRTC (the CPU machine's check of the kernel alone) compiles the kernel, not the harness
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#else
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

// ---------------------------------------------------------------------------
// The kernel.
//
// A block is two warpgroups (256 threads) and computes 128 rows × 128
// columns of y: warpgroup g rows [64g, 64g+64), every column, with one
// wgmma.m64n128k8 per k8 step and product term. Tiles of k are 32 wide; two
// stages of shared memory; the next tile's inputs are read from global
// memory into registers while the tensor cores work on this one, then split
// into hi and lo and stored into the other stage.
//
// Shared memory holds each operand tile (128 rows × 32 of k, hi and lo
// apart) in wgmma's canonical K-major layout without swizzling: a "core
// matrix" is 8 rows × 16 bytes (4 TF32 values of k), 128 contiguous bytes.
// Here a tile is 8 columns of k-quads, and in a column the rows follow each
// other 16 bytes apart, so the core matrices of one k-quad are 128 bytes
// apart (the stride-dimension offset, SBO) and the two k-quads of a k8 step
// one column apart (the leading-dimension offset, LBO = a column's bytes).
// A column is padded by 16 bytes so that the 8 threads that store one row's
// 8 quads (a quarter warp's 16-byte stores) hit 8 different bank groups.
#define TM 128
#define TN 128
#define TK 32
#define QUADS (TK / 4)
#define COL_BYTES (TM * 16 + 16) // one k-quad column of a tile, padded
#define TILE_BYTES (QUADS * COL_BYTES)
#define STAGE_BYTES (4 * TILE_BYTES) // x hi, x lo, w hi, w lo
#define SMEM_BYTES (2 * STAGE_BYTES)

__device__ __forceinline__ uint32_t tf32_rna(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// desc is a wgmma matrix descriptor: start address, leading- and
// stride-dimension byte offsets, each in units of 16 bytes; no swizzling.
__device__ __forceinline__ uint64_t desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32);
}

// wgmma_tf32 is d (+)= a·b for the warpgroup's 64 × 128 tile, k = 8; d is
// overwritten when accumulate is 0.
__device__ __forceinline__ void wgmma_tf32(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"(accumulate));
}

// pin keeps the compiler from moving reads or writes of the accumulator
// across the wgmma fences and waits (CUTLASS's warpgroup_fence_operand).
__device__ __forceinline__ void pin(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// load reads this thread's share of a tile of k into registers: rows
// [r0, r0+128) of a row-major [rows][k] matrix at columns [k0, k0+32), zeros
// past the last row; 4 float4s, 8 threads to a row's 128 bytes.
__device__ __forceinline__ void load(float4 (&v)[4], const float* m, int rows, int k, int r0, int k0) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int p = threadIdx.x + 256 * i, r = r0 + (p >> 3), q = p & 7;
        v[i] = r < rows ? __ldg(reinterpret_cast<const float4*>(m + (size_t)r * k + k0 + q * 4)) : make_float4(0, 0, 0, 0);
    }
}

// store splits the registers load read into hi and lo and stores them into
// a stage's tiles (hi at hi, lo at hi + TILE_BYTES).
__device__ __forceinline__ void store(const float4 (&v)[4], uint32_t hi) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int p = threadIdx.x + 256 * i, r = p >> 3, q = p & 7;
        uint32_t a = hi + q * COL_BYTES + r * 16;
        uint32_t h0 = tf32_rna(v[i].x), h1 = tf32_rna(v[i].y), h2 = tf32_rna(v[i].z), h3 = tf32_rna(v[i].w);
        uint32_t l0 = tf32_rna(v[i].x - __uint_as_float(h0)), l1 = tf32_rna(v[i].y - __uint_as_float(h1)),
                 l2 = tf32_rna(v[i].z - __uint_as_float(h2)), l3 = tf32_rna(v[i].w - __uint_as_float(h3));
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(h0), "r"(h1), "r"(h2), "r"(h3));
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a + TILE_BYTES), "r"(l0), "r"(l1), "r"(l2), "r"(l3));
    }
}

// gemm_wgmma: y = x · Wᵀ; grid (⌈n/128⌉, ⌈rows/128⌉), 256 threads, SMEM_BYTES
// of dynamic shared memory; k a multiple of 32, n of 2, x and w 16-byte
// aligned. The tensor-core accumulator is added to the float32 sum every
// PROMOTE tiles of k. lbo and sbo are the descriptors' offsets for this
// layout (COL_BYTES and 128); they are arguments so that the harness can try
// them swapped if the first correctness check fails.
template <int PROMOTE>
__global__ void __launch_bounds__(256, 1)
    gemm_wgmma(float* y, const float* x, const float* w, int rows, int n, int k, uint32_t lbo, uint32_t sbo) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    const int wg = threadIdx.x >> 7;
    const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
    float acc[64], sum[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.f, sum[i] = 0.f;

    float4 xv[4], wv[4];
    load(xv, x, rows, k, row0, 0);
    load(wv, w, n, k, col0, 0);
    store(xv, base);
    store(wv, base + 2 * TILE_BYTES);
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();

    const int tiles = k / TK;
    for (int t = 0; t < tiles; t++) {
        const uint32_t stage = base + (t & 1) * STAGE_BYTES;
        if (t + 1 < tiles) { // the next tile's inputs, in flight while the tensor cores work
            load(xv, x, rows, k, row0, (t + 1) * TK);
            load(wv, w, n, k, col0, (t + 1) * TK);
        }
        const uint32_t xhi = stage + wg * 64 * 16, xlo = xhi + TILE_BYTES;
        const uint32_t whi = stage + 2 * TILE_BYTES, wlo = whi + TILE_BYTES;
        pin(acc);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < TK / 8; s++) {
            const uint32_t o = 2 * s * COL_BYTES; // the k8 step's first k-quad column
            const int fresh = s == 0 && t % PROMOTE == 0;
            wgmma_tf32(acc, desc(xlo + o, lbo, sbo), desc(whi + o, lbo, sbo), !fresh);
            wgmma_tf32(acc, desc(xhi + o, lbo, sbo), desc(wlo + o, lbo, sbo), 1);
            wgmma_tf32(acc, desc(xhi + o, lbo, sbo), desc(whi + o, lbo, sbo), 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        pin(acc);
        if (t % PROMOTE == PROMOTE - 1 || t + 1 == tiles) {
#pragma unroll
            for (int i = 0; i < 64; i++) sum[i] = __fadd_rn(sum[i], acc[i]);
        }
        if (t + 1 < tiles) {
            const uint32_t next = base + ((t + 1) & 1) * STAGE_BYTES;
            store(xv, next);
            store(wv, next + 2 * TILE_BYTES);
            asm volatile("fence.proxy.async.shared::cta;");
        }
        __syncthreads();
    }

    // The accumulator's layout: warp w of the warpgroup holds rows 16w..16w+15;
    // lane (g = lane/4, c = lane%4) holds, for each 8 columns j, (g, 8j+2c),
    // (g, 8j+2c+1), (g+8, 8j+2c), (g+8, 8j+2c+1).
    const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int r = row0 + wg * 64 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < 16; j++) {
        int col = col0 + j * 8 + 2 * c;
        if (col >= n) continue;
        if (r < rows) *reinterpret_cast<float2*>(y + (size_t)r * n + col) = make_float2(sum[4 * j], sum[4 * j + 1]);
        if (r + 8 < rows)
            *reinterpret_cast<float2*>(y + (size_t)(r + 8) * n + col) = make_float2(sum[4 * j + 2], sum[4 * j + 3]);
    }
}

#ifndef __CUDACC_RTC__
// ---------------------------------------------------------------------------
// The harness.

// fill writes pseudo-normal values (a hash through Box-Muller) times scale.
__global__ void fill(float* v, size_t n, uint32_t seed, float scale) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 0x9E3779B9u;
    h ^= h >> 16, h *= 0x7feb352d, h ^= h >> 15, h *= 0x846ca68b, h ^= h >> 16;
    uint32_t h2 = h * 0x2c1b3c6d + 0x297a2d39;
    h2 ^= h2 >> 12, h2 *= 0x297a2d39, h2 ^= h2 >> 15;
    float u1 = ((h >> 8) + 1) * (1.0f / 16777217.0f), u2 = (h2 >> 8) * (1.0f / 16777216.0f);
    v[i] = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2) * scale;
}

// reference computes, in float64, y64 and Σ|x·w| for the first rows rows:
// a thread takes one column and 16 rows, so that W is read rows/16 times.
__global__ void reference(double* y64, double* mag, const float* x, const float* w, int rows, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, r0 = blockIdx.y * 16;
    if (col >= n) return;
    double s[16] = {0}, m[16] = {0};
    for (int i = 0; i < k; i++) {
        double wv = w[(size_t)col * k + i];
        for (int j = 0; j < 16; j++)
            if (r0 + j < rows) {
                double p = (double)x[(size_t)(r0 + j) * k + i] * wv;
                s[j] += p, m[j] += fabs(p);
            }
    }
    for (int j = 0; j < 16; j++)
        if (r0 + j < rows) y64[(size_t)(r0 + j) * n + col] = s[j], mag[(size_t)(r0 + j) * n + col] = m[j];
}

struct Err {
    double rms, max;
};

static Err errors(const float* y, const double* y64, const double* mag, int rows, int n) {
    std::vector<float> h((size_t)rows * n);
    std::vector<double> r((size_t)rows * n), m((size_t)rows * n);
    CK(cudaMemcpy(h.data(), y, h.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), y64, r.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(m.data(), mag, m.size() * 8, cudaMemcpyDeviceToHost));
    double se = 0, sr = 0, mx = 0;
    for (size_t i = 0; i < h.size(); i++) {
        double d = h[i] - r[i];
        se += d * d, sr += r[i] * r[i];
        if (m[i] > 0) mx = std::max(mx, fabs(d) / m[i]);
        if (!std::isfinite(h[i])) mx = INFINITY;
    }
    return {sqrt(se / sr), mx};
}

static cublasHandle_t blas, blas_emu; // blas_emu: the handle whose emulation strategy is EAGER
static bool have_emulation = false;

enum Method { OURS1, OURS2, SGEMM, TF32, BF16X9, NMETHODS };
static const char* names[NMETHODS] = {"wgmma/1", "wgmma/2", "sgemm", "tf32", "bf16x9"};
static uint32_t g_lbo = COL_BYTES, g_sbo = 128;

static bool run(Method m, float* y, const float* x, const float* w, int rows, int n, int k) {
    const float one = 1, zero = 0;
    switch (m) {
    case OURS1:
    case OURS2: {
        dim3 grid((n + TN - 1) / TN, (rows + TM - 1) / TM);
        if (m == OURS1)
            gemm_wgmma<1><<<grid, 256, SMEM_BYTES>>>(y, x, w, rows, n, k, g_lbo, g_sbo);
        else
            gemm_wgmma<2><<<grid, 256, SMEM_BYTES>>>(y, x, w, rows, n, k, g_lbo, g_sbo);
        return cudaGetLastError() == cudaSuccess;
    }
    case SGEMM:
        return cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w, k, x, k, &zero, y, n) ==
               CUBLAS_STATUS_SUCCESS;
    case TF32:
        return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w, CUDA_R_32F, k, x, CUDA_R_32F, k, &zero, y,
                            CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    case BF16X9:
#if CUBLAS_VERSION >= 120900 && !defined(NO_EMULATION)
        return have_emulation &&
               cublasGemmEx(blas_emu, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w, CUDA_R_32F, k, x, CUDA_R_32F, k,
                            &zero, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_GEMM_DEFAULT) ==
                   CUBLAS_STATUS_SUCCESS;
#else
        return false;
#endif
    default:
        return false;
    }
}

static double timed(Method m, float* y, const float* x, const float* w, int rows, int n, int k) {
    for (int i = 0; i < 3; i++)
        if (!run(m, y, x, w, rows, n, k)) return NAN;
    CK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ts;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(a));
        run(m, y, x, w, rows, n, k);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        ts.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

struct Problem {
    int rows, n, k, checked;
    float *x, *w, *y;
    double *y64, *mag;
    Problem(int rows_, int n_, int k_, int checked_) : rows(rows_), n(n_), k(k_), checked(std::min(rows_, checked_)) {
        CK(cudaMalloc(&x, (size_t)rows * k * 4));
        CK(cudaMalloc(&w, (size_t)n * k * 4));
        CK(cudaMalloc(&y, (size_t)rows * n * 4));
        CK(cudaMalloc(&y64, (size_t)checked * n * 8));
        CK(cudaMalloc(&mag, (size_t)checked * n * 8));
        fill<<<(unsigned)(((size_t)rows * k + 255) / 256), 256>>>(x, (size_t)rows * k, 1, 1.f);
        fill<<<(unsigned)(((size_t)n * k + 255) / 256), 256>>>(w, (size_t)n * k, 2, 1.f / sqrtf((float)k));
        reference<<<dim3((n + 127) / 128, (checked + 15) / 16), 128>>>(y64, mag, x, w, checked, n, k);
        CK(cudaDeviceSynchronize());
    }
    ~Problem() {
        cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(y64), cudaFree(mag);
    }
    Err check(Method m) {
        CK(cudaMemset(y, 0xff, (size_t)rows * n * 4)); // NaNs where nothing is written
        if (!run(m, y, x, w, rows, n, k)) return {NAN, NAN};
        CK(cudaDeviceSynchronize());
        return errors(y, y64, mag, checked, n);
    }
    // repeatable reports whether two runs give the same bits.
    bool repeatable(Method m) {
        std::vector<float> a((size_t)rows * n), b((size_t)rows * n);
        run(m, y, x, w, rows, n, k);
        CK(cudaMemcpy(a.data(), y, a.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemset(y, 0, (size_t)rows * n * 4));
        run(m, y, x, w, rows, n, k);
        CK(cudaMemcpy(b.data(), y, b.size() * 4, cudaMemcpyDeviceToHost));
        return memcmp(a.data(), b.data(), a.size() * 4) == 0;
    }
};

// diagnose prints where a wrong result is wrong: the error of each 8 × 8
// block of the first 64 rows and columns, to tell a layout mistake (whole
// blocks) from an arithmetic one (everywhere).
static void diagnose(Problem& p, Method m) {
    p.check(m);
    std::vector<float> h((size_t)p.checked * p.n);
    std::vector<double> r((size_t)p.checked * p.n);
    CK(cudaMemcpy(h.data(), p.y, h.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), p.y64, r.size() * 8, cudaMemcpyDeviceToHost));
    printf("# %s: max |y - y64| in each 8x8 block of the first 64 rows (down) and 64 columns (across):\n", names[m]);
    for (int bi = 0; bi < 8 && bi * 8 < p.checked; bi++) {
        printf("#  ");
        for (int bj = 0; bj < 8; bj++) {
            double e = 0;
            for (int i = bi * 8; i < bi * 8 + 8 && i < p.checked; i++)
                for (int j = bj * 8; j < bj * 8 + 8 && j < p.n; j++) e = std::max(e, fabs(h[(size_t)i * p.n + j] - r[(size_t)i * p.n + j]));
            printf(" %8.1e", e);
        }
        printf("\n");
    }
    printf("# y[0][0..3] = %g %g %g %g; y64 = %g %g %g %g\n", h[0], h[1], h[2], h[3], r[0], r[1], r[2], r[3]);
}

int main(int argc, char** argv) {
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("# %s, sm_%d%d, %d SMs; cuBLAS %d; CUDA runtime %d\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           CUBLAS_VERSION, CUDART_VERSION);
    if (prop.major != 9) {
        printf("# gemm_wgmma needs an sm_90 GPU (Hopper)\n");
        return 2;
    }
    CK(cudaFuncSetAttribute(gemm_wgmma<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    CK(cudaFuncSetAttribute(gemm_wgmma<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, gemm_wgmma<1>));
    printf("# gemm_wgmma<1>: %d registers, %zu bytes of local memory per thread, %d bytes of dynamic shared memory\n",
           fa.numRegs, fa.localSizeBytes, SMEM_BYTES);
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
        printf("# cublasCreate failed\n");
        return 1;
    }
#if CUBLAS_VERSION >= 120900 && !defined(NO_EMULATION)
    have_emulation = cublasCreate(&blas_emu) == CUBLAS_STATUS_SUCCESS &&
                     cublasSetEmulationStrategy(blas_emu, CUBLAS_EMULATION_STRATEGY_EAGER) == CUBLAS_STATUS_SUCCESS;
#endif
    printf("# cuBLAS BF16x9 emulation: %s\n", have_emulation ? "available, strategy EAGER" : "not available");

    // Correctness first, on a shape with partial tiles in rows (and columns,
    // 192 = 1.5 tiles), against float64: the error must be within 8 times a
    // float32 FMA chain's bound on every output (max/Σ|x·w| below 8·k·2^-24).
    {
        Problem p(128 + 37, 192, 256, 165);
        bool ok = false;
        for (int attempt = 0; attempt < 2 && !ok; attempt++) {
            Err e1 = p.check(OURS1), e2 = p.check(OURS2), es = p.check(SGEMM);
            double bound = 8.0 * p.k * ldexp(1.0, -24);
            ok = e1.max < bound && e2.max < bound;
            printf("# check 165x192x256 (lbo %u, sbo %u): wgmma/1 rms %.2e max %.2e; wgmma/2 rms %.2e max %.2e; sgemm rms %.2e max "
                   "%.2e; bound %.2e: %s\n",
                   g_lbo, g_sbo, e1.rms, e1.max, e2.rms, e2.max, es.rms, es.max, bound, ok ? "PASS" : "FAIL");
            if (!ok) {
                diagnose(p, OURS1);
                std::swap(g_lbo, g_sbo);
            }
        }
        if (!ok) {
            printf("# gemm_wgmma is wrong with either descriptor offset order: stopping\n");
            return 1;
        }
        printf("# repeat runs bit-identical: wgmma/1 %s, wgmma/2 %s\n", p.repeatable(OURS1) ? "yes" : "NO",
               p.repeatable(OURS2) ? "yes" : "NO");
    }
    if (argc > 1 && strcmp(argv[1], "--check") == 0) return 0; // for compute-sanitizer: the check alone

    struct Shape {
        const char* name;
        int k, n;
    } shapes[] = {
        {"Llama q/o", 2048, 2048},   {"Llama k/v", 2048, 512},    {"Llama gate/up", 2048, 8192}, {"Llama down", 8192, 2048},
        {"Qwen3 q", 1024, 2048},     {"Qwen3 k/v", 1024, 1024},   {"Qwen3 o", 2048, 1024},       {"Qwen3 gate/up", 1024, 3072},
        {"Qwen3 down", 3072, 1024},  {"Llama lm_head", 2048, 128256},
    };
    int rowsList[] = {640, 1024, 2400, 4800};
    printf("# median of 20 after 3 warm-ups (ms); TFLOP/s of the best of ours; errors on the first 256 rows against float64: "
           "rms(y-y64)/rms(y64) and max |y-y64|/Σ|x·w|\n");
    printf("%-14s %5s %5s %6s", "shape", "M", "K", "N");
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", names[m]);
    printf(" %7s %8s", "TFLOP/s", "/sgemm");
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", (std::string("rms ") + names[m]).c_str());
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", (std::string("max ") + names[m]).c_str());
    printf("\n");
    for (int rows : rowsList)
        for (auto& s : shapes) {
            if (s.n == 128256 && rows != 1024) continue;
            Problem p(rows, s.n, s.k, s.n > 16384 ? 64 : 256);
            double t[NMETHODS];
            Err e[NMETHODS];
            for (int m = 0; m < NMETHODS; m++) {
                e[m] = p.check((Method)m);
                t[m] = timed((Method)m, p.y, p.x, p.w, rows, s.n, s.k);
            }
            double best = std::min(t[OURS1], t[OURS2]);
            double fl = 2.0 * rows * s.k * (double)s.n;
            printf("%-14s %5d %5d %6d", s.name, rows, s.k, s.n);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.4f", t[m]);
            printf(" %7.1f %8.2f", fl / best / 1e9, t[SGEMM] / best);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.2e", e[m].rms);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.2e", e[m].max);
            printf("\n");
            fflush(stdout);
        }
    cublasDestroy(blas);
    return 0;
}
#else
template __global__ void gemm_wgmma<1>(float*, const float*, const float*, int, int, int, uint32_t, uint32_t);
template __global__ void gemm_wgmma<2>(float*, const float*, const float*, int, int, int, uint32_t, uint32_t);
#endif
