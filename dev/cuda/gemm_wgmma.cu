// gemm_wgmma: a standalone program that checks and times the CUDA backend's
// float32-accurate products on Hopper's tensor cores (3xTF32 through wgmma,
// tensor/cuda/kernels_sm90a/gemm_3xtf32.cu, which says how they work) on a
// GPU, kept here as llm.c keeps its dev/cuda programs. NOT YET RUN ON A GPU:
// written on a machine without one; the first GPU session that has one runs
// it (scripts/gpu/session.sh OUT tcgemm).
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
// It checks the kernels against float64 first (and, if that fails, again
// with the shared-memory descriptors' two offsets swapped, printing where
// the result is wrong), and that the two orders of a tile's work give the
// same bits, then compares on each of the models' projection shapes, in
// the same run: the backend's kernel (wgmma/1: promoting every tile, the
// next tile split and stored while the tensor cores work), the same in the
// order before (wgmma/1s: split and stored after the wait), promoting every
// second tile (wgmma/2, overlapped), cuBLAS SGEMM, cuBLAS TF32 and, where
// cuBLAS has it (12.9 and later), cuBLAS's own float32 emulation on
// bfloat16 tensor cores (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, forced with
// the EAGER strategy): time, and error against float64. The column 1s/1 is
// wgmma/1s's time over wgmma/1's: what the overlap gains; =1s whether the
// two gave the same bits on that shape. wgmma/S is the backend's split k
// (gemm_3xtf32_split into a workspace, then gemm_3xtf32_reduce: both
// launches timed) in the S slices the backend's rule (matmul.go's
// split3xTF32, mirrored in split3xtf32 below) chooses for the shape on
// this GPU, timed only where S > 1; the column S is that choice (1: the
// backend takes gemm_3xtf32, wgmma/1; 0: SGEMM) and sg/S SGEMM's time over
// wgmma/S's (above 1: the split is faster than SGEMM there). The rows 640
// and 1,280 (a ZO step of 8×80) come first: there the rule splits.
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

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

// The kernel is the backend's (Options.TF32x3).
#include "../../tensor/cuda/kernels_sm90a/gemm_3xtf32.cu"

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

enum Method { OURS1, OURS1S, OURS2, SPLIT, SGEMM, TF32, BF16X9, NMETHODS };
static const char* names[NMETHODS] = {"wgmma/1", "wgmma/1s", "wgmma/2", "wgmma/S", "sgemm", "tf32", "bf16x9"};
// The kernels of the three wgmma methods (gemm_3xtf32.cu).
typedef void (*Kernel)(float*, const float*, const float*, int, int, int, int, int, float, unsigned, unsigned);
static const Kernel kernels[3] = {gemm_3xtf32, gemm_3xtf32_serial, gemm_3xtf32_every2};
static const char* kernelNames[3] = {"gemm_3xtf32", "gemm_3xtf32_serial", "gemm_3xtf32_every2"};
static unsigned g_lbo = GW_COL_BYTES, g_sbo = 128;

// The split path's slices (SPLIT runs only for g_slices ≥ 2) and its
// workspace [g_slices][rows][n], grown by use_slices.
static int g_slices = 0;
static float* g_part = nullptr;
static size_t g_part_floats = 0;

static void use_slices(int slices, int rows, int n) {
    g_slices = slices;
    size_t need = (size_t)slices * rows * n;
    if (slices >= 2 && need > g_part_floats) {
        if (g_part) CK(cudaFree(g_part));
        CK(cudaMalloc(&g_part, need * 4));
        g_part_floats = need;
    }
}

// split3xtf32 is the backend's rule (tensor/cuda/matmul.go's split3xTF32,
// fills3xTF32 and fillsGrid, which it must mirror): the slices of k for a
// product on sms multiprocessors, 0 for SGEMM: 1 where the grid keeps 75 %
// of them busy over its waves, else the fewest of 2-4 slices of >= 16 tiles
// that do, else 1 where the grid alone keeps 60 % busy.
static bool fills_grid(int blocks, int sms, double fill) {
    int waves = (blocks + sms - 1) / sms;
    return (double)blocks >= fill * (double)(waves * sms);
}
static int split3xtf32(int rows, int n, int k, int sms) {
    int blocks = ((n + 127) / 128) * ((rows + 127) / 128);
    if (fills_grid(blocks, sms, 0.75)) return 1;
    for (int s = 2; s <= 4 && k / 32 / s >= 16; s++)
        if (fills_grid(blocks * s, sms, 0.75)) return s;
    return fills_grid(blocks, sms, 0.6) ? 1 : 0;
}

static bool run(Method m, float* y, const float* x, const float* w, int rows, int n, int k) {
    const float one = 1, zero = 0;
    switch (m) {
    case OURS1:
    case OURS1S:
    case OURS2: {
        dim3 grid((n + GW_TN - 1) / GW_TN, (rows + GW_TM - 1) / GW_TM);
        kernels[m - OURS1]<<<grid, 256, GW_SMEM_BYTES>>>(y, x, w, rows, n, k, n, 0, 1.f, g_lbo, g_sbo);
        return cudaGetLastError() == cudaSuccess;
    }
    case SPLIT: { // as the backend launches them (matmul.go's gemm3xTF32)
        if (g_slices < 2) return false;
        dim3 grid((n + GW_TN - 1) / GW_TN, (rows + GW_TM - 1) / GW_TM, g_slices);
        gemm_3xtf32_split<<<grid, 256, GW_SMEM_BYTES>>>(g_part, x, w, rows, n, k, g_slices, g_lbo, g_sbo);
        size_t pairs = (size_t)rows * n / 2;
        unsigned blocks = (unsigned)std::max<size_t>(1, std::min<size_t>((pairs + 255) / 256, 65535 * 8));
        gemm_3xtf32_reduce<<<blocks, 256>>>(y, g_part, rows, n, n, g_slices, 0, 1.f);
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
    // same reports whether a run of m and one of m2 give the same bits
    // (m2 = m: whether two runs do).
    bool same(Method m, Method m2) {
        std::vector<float> a((size_t)rows * n), b((size_t)rows * n);
        run(m, y, x, w, rows, n, k);
        CK(cudaMemcpy(a.data(), y, a.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemset(y, 0, (size_t)rows * n * 4));
        run(m2, y, x, w, rows, n, k);
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
    for (int i = 0; i < 3; i++) {
        CK(cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, GW_SMEM_BYTES));
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, kernels[i]));
        printf("# %s (%s): %d registers, %zu bytes of local memory per thread, %d bytes of dynamic shared memory\n",
               kernelNames[i], names[OURS1 + i], fa.numRegs, fa.localSizeBytes, GW_SMEM_BYTES);
    }
    {
        CK(cudaFuncSetAttribute(gemm_3xtf32_split, cudaFuncAttributeMaxDynamicSharedMemorySize, GW_SMEM_BYTES));
        cudaFuncAttributes fa, fr;
        CK(cudaFuncGetAttributes(&fa, gemm_3xtf32_split));
        CK(cudaFuncGetAttributes(&fr, gemm_3xtf32_reduce));
        printf("# gemm_3xtf32_split (%s): %d registers, %zu bytes of local memory per thread; gemm_3xtf32_reduce: %d "
               "registers, %zu bytes of local memory\n",
               names[SPLIT], fa.numRegs, fa.localSizeBytes, fr.numRegs, fr.localSizeBytes);
    }
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
    // Then the bits: each kernel's two runs must agree, and wgmma/1 with
    // wgmma/1s (the same operations in another order: a difference is a race,
    // a stage overwritten while the tensor cores read it).
    {
        Problem p(128 + 37, 192, 256, 165);
        bool ok = false;
        for (int attempt = 0; attempt < 2 && !ok; attempt++) {
            Err e[3], es = p.check(SGEMM);
            double bound = 8.0 * p.k * ldexp(1.0, -24);
            ok = true;
            printf("# check 165x192x256 (lbo %u, sbo %u):", g_lbo, g_sbo);
            for (int i = 0; i < 3; i++) {
                e[i] = p.check((Method)(OURS1 + i));
                ok = ok && e[i].max < bound;
                printf(" %s rms %.2e max %.2e;", names[OURS1 + i], e[i].rms, e[i].max);
            }
            printf(" sgemm rms %.2e max %.2e; bound %.2e: %s\n", es.rms, es.max, bound, ok ? "PASS" : "FAIL");
            if (!ok) {
                for (int i = 0; i < 3; i++)
                    if (!(e[i].max < bound)) diagnose(p, (Method)(OURS1 + i));
                std::swap(g_lbo, g_sbo);
            }
        }
        if (!ok) {
            printf("# gemm_wgmma is wrong with either descriptor offset order: stopping\n");
            return 1;
        }
        bool same1 = p.same(OURS1, OURS1S);
        printf("# repeat runs bit-identical: wgmma/1 %s, wgmma/1s %s, wgmma/2 %s; wgmma/1 and wgmma/1s bit-identical: %s\n",
               p.same(OURS1, OURS1) ? "yes" : "NO", p.same(OURS1S, OURS1S) ? "yes" : "NO", p.same(OURS2, OURS2) ? "yes" : "NO",
               same1 ? "yes" : "NO (a race: the overlapped order is wrong)");
        // The split path on the same shape: 8 tiles of k in 2 slices ([0, 4), [4, 8)) and in 3 ([0, 2), [2, 5),
        // [5, 8)), within the same bound, two runs bit-identical (the reduce adds the slices in a fixed order).
        for (int slices = 2; slices <= 3; slices++) {
            use_slices(slices, p.rows, p.n);
            Err e = p.check(SPLIT);
            bool fine = e.max < 8.0 * p.k * ldexp(1.0, -24), same = p.same(SPLIT, SPLIT);
            printf("# check 165x192x256 in %d slices (wgmma/S): rms %.2e max %.2e: %s; repeat runs bit-identical: %s\n", slices,
                   e.rms, e.max, fine ? "PASS" : "FAIL", same ? "yes" : "NO");
            ok = ok && fine && same;
        }
        if (!ok) {
            printf("# the split path is wrong: stopping\n");
            return 1;
        }
    }
    if (argc > 1 && strcmp(argv[1], "--check") == 0) return 0; // for compute-sanitizer: the check alone

    struct Shape {
        const char* name;
        int k, n;
        int rows; // 0: each of rowsList; else these rows only
    } shapes[] = {
        {"Llama q/o", 2048, 2048},   {"Llama k/v", 2048, 512},    {"Llama gate/up", 2048, 8192}, {"Llama down", 8192, 2048},
        {"Qwen3 q", 1024, 2048},     {"Qwen3 k/v", 1024, 1024},   {"Qwen3 o", 2048, 1024},       {"Qwen3 gate/up", 1024, 3072},
        {"Qwen3 down", 3072, 1024},  {"Llama lm_head", 2048, 128256, 1024},
        // ViT-B/16 at batch 32 (197 tokens an image): its q/k/v/o and fc1 have k = 768, below the backend's bound
        // (gemm3xTF32MinK = 1024), measured here to see whether the kernel should take them; fc2 (k = 3,072) does.
        {"ViT q/k/v/o", 768, 768, 6304}, {"ViT fc1", 768, 3072, 6304}, {"ViT fc2", 3072, 768, 6304},
    };
    int rowsList[] = {640, 1280, 1024, 2400, 4800, 6304}; // 640 and 1,280 first: the rule splits there
    printf("# median of 20 after 3 warm-ups (ms); TFLOP/s and speed over SGEMM's of the best of ours; 1s/1: wgmma/1s's time "
           "over wgmma/1's; =1s: whether they gave the same bits (a NO is a race); errors on the first 256 rows against float64: rms(y-y64)/rms(y64) and max |y-y64|/Σ|x·w|\n");
    printf("%-14s %5s %5s %6s", "shape", "M", "K", "N");
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", names[m]);
    printf(" %7s %8s %6s %4s %2s %6s", "TFLOP/s", "/sgemm", "1s/1", "=1s", "S", "sg/S");
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", (std::string("rms ") + names[m]).c_str());
    for (int m = 0; m < NMETHODS; m++) printf(" %9s", (std::string("max ") + names[m]).c_str());
    printf("\n");
    for (int rows : rowsList)
        for (auto& s : shapes) {
            if (s.rows != 0 ? rows != s.rows : rows == 6304) continue;
            Problem p(rows, s.n, s.k, s.n > 16384 ? 64 : 256);
            const int slices = split3xtf32(rows, s.n, s.k, prop.multiProcessorCount);
            use_slices(slices, rows, s.n); // wgmma/S: nan unless slices ≥ 2
            double t[NMETHODS];
            Err e[NMETHODS];
            for (int m = 0; m < NMETHODS; m++) {
                e[m] = p.check((Method)m);
                t[m] = timed((Method)m, p.y, p.x, p.w, rows, s.n, s.k);
            }
            double best = std::min({t[OURS1], t[OURS1S], t[OURS2]});
            double fl = 2.0 * rows * s.k * (double)s.n;
            printf("%-14s %5d %5d %6d", s.name, rows, s.k, s.n);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.4f", t[m]);
            printf(" %7.1f %8.2f %6.2f %4s %2d %6.2f", fl / best / 1e9, t[SGEMM] / best, t[OURS1S] / t[OURS1],
                   p.same(OURS1, OURS1S) ? "yes" : "NO", slices, t[SGEMM] / t[SPLIT]);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.2e", e[m].rms);
            for (int m = 0; m < NMETHODS; m++) printf(" %9.2e", e[m].max);
            printf("\n");
            fflush(stdout);
        }
    cublasDestroy(blas);
    if (g_part) cudaFree(g_part);
    return 0;
}
