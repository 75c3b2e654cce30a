// gemm_3xtf32: float32-accurate matrix products on Hopper's tensor cores
// (3xTF32 through wgmma), the backend's Options.TF32x3 (MEAZO_CUDA_3XTF32).
//
// This folder is compiled apart from kernels/: wgmma is sm_90a-only PTX, and
// a module holding it would not load on any other GPU. ptxgen -hopper
// compiles it with the pinned NVRTC for compute_90 and retargets the PTX to
// sm_90a (PTX ISA 8.0), which the driver JIT-compiles on an H100 or H200 only
// (kernels_sm90a.ptx; the backend loads it only when the option asks).
// dev/cuda/gemm_wgmma.cu includes this file into a standalone program that
// checks it against float64 and times it against cuBLAS.
//
// y [M][N] = x [M][K] · Wᵀ for a row-major W [N][K] (y's rows ldy apart, so
// that y may be a block of a wider matrix's columns), or with add
// y += s · x · Wᵀ (a residual's projection: each output fmaf(s, sum, y),
// rounded once). Each float32 input is
// split into a TF32 part and a TF32 remainder (hi = rna(v), lo = rna(v − hi))
// and each product taken as lo·hi + hi·lo + hi·hi on the tensor cores. The
// tensor cores add into their accumulator with truncation (25 fractional
// bits aligned to the largest term, the sum truncated to float32), a bias
// that grows with k (gemm_tf32x3 in dev/cuda had 12-100× SGEMM's error for
// it); here the tensor-core accumulator restarts from zero on every tile of
// k (32 values: 12 wgmma) and is then added, rounded to nearest, to a
// float32 sum on the CUDA cores: on a model of the tensor cores'
// arithmetic (internal/tensorcore, dev/cuda/tcsim.go) 0.25-0.47× the rms
// error of a float32 FMA chain at k = 1,024-8,192. The split's own error is
// a floor that the chain's crosses near k = 200 on that model (on an H200
// cuBLAS SGEMM was more accurate than the model of it, so the backend uses
// it from k = 1,024: matmul.go's gemm3xTF32MinK). Every output is one thread's fixed sequence of
// operations, so a run is bit-identical to itself.
//
// Split k (gemm_3xtf32_split, gemm_3xtf32_reduce): a grid of 128 × 128
// blocks too small to keep the GPU's multiprocessors busy (matmul.go's
// split3xTF32) takes k's tiles in 2-4 contiguous slices, a block for each
// slice of each 128 × 128 outputs, each writing its slice's float32 sum to
// a workspace; a second kernel adds the slices in a fixed order. Its bits
// are those of that split (tensorcore.Dot3xTF32Split), deterministic, and
// differ from the unsplit kernel's by the rounding of the slices' sums.
// NOT YET RUN ON A GPU: whether it is faster than SGEMM on those shapes is
// what dev/cuda/gemm_wgmma.cu's wgmma/S column is for.
//
// The option stays off by default until scripts/gpu/session.sh's tcgemm
// part has checked and timed it. On an H200 (2026-11-30, with the serial
// order below, then the only one) a forward at 8×128 tokens with it took
// 1.09× PyTorch's speed for Llama-3.2-1B and 0.98× for Qwen3-0.6B
// (docs/bench/2026-11-30-h200/run1-febb616/tcbench.txt). The overlapped
// order, the backend's since, is NOT YET RUN ON A GPU: written on a
// machine without one, its speed unmeasured; dev/cuda/gemm_wgmma.cu times
// both orders in one run. On the
// kernel emulator (tensor/cuda/emu), where the primitives below are
// emu.cpp's model of them (wgmma performed at the wait), every output of
// each order is the bits of internal/tensorcore's model of this kernel
// (TestEmulated3xTF32, TestEmulated3xTF32Variants).

// A block is two warpgroups (256 threads) and computes 128 rows × 128
// columns of y: warpgroup g rows [64g, 64g+64), every column, with one
// wgmma.m64n128k8 per k8 step and product term. Tiles of k are 32 wide; two
// stages of shared memory. The backend's order (gemm_wgmma's OVERLAP, below)
// splits the next tile into hi and lo and stores it into the other stage
// while the tensor cores work on this one, and reads the tile after it from
// global memory into the registers that frees; with one block a
// multiprocessor (its shared memory and registers), nothing else fills the
// tensor cores' idle time in the order before (split and store after the
// wait), which gemm_3xtf32_serial keeps for comparison.
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
#define GW_TM 128
#define GW_TN 128
#define GW_TK 32
#define GW_QUADS (GW_TK / 4)
#define GW_COL_BYTES (GW_TM * 16 + 16) // one k-quad column of a tile, padded
#define GW_TILE_BYTES (GW_QUADS * GW_COL_BYTES)
#define GW_STAGE_BYTES (4 * GW_TILE_BYTES) // x hi, x lo, w hi, w lo
#define GW_SMEM_BYTES (2 * GW_STAGE_BYTES)

// The primitives: inline PTX on the GPU; on the kernel emulator (g++, no
// __CUDACC__), emu.cpp's model of them (its wgmma has the tensor cores'
// arithmetic as Microsoft's MMA-Sim measured it on Hopper, and is
// asynchronous as on the GPU: performed at the wait, on the shared memory
// and accumulator of that moment, so that reading the accumulator before
// the wait, or overwriting a stage that wgmma in flight read, gives other
// bits there too).
#ifdef __CUDACC__
#define GW_SHARED(name) extern __shared__ __align__(128) unsigned char name[]

// gw_smem is the shared-memory address of p (what descriptors and st.shared take).
__device__ __forceinline__ unsigned gw_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// gw_tf32 rounds v to TF32: nearest, ties away from zero (cvt.rna).
__device__ __forceinline__ unsigned gw_tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// gw_st4 stores four words at shared address a.
__device__ __forceinline__ void gw_st4(unsigned a, unsigned x, unsigned y, unsigned z, unsigned w) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(x), "r"(y), "r"(z), "r"(w));
}

// gw_wgmma is d (+)= a·b for the warpgroup's 64 × 128 tile, k = 8, TF32
// operands in shared memory (descriptors a and b); d is overwritten when
// accumulate is 0.
__device__ __forceinline__ void gw_wgmma(float (&d)[64], unsigned long long a, unsigned long long b, int accumulate) {
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

// gw_pin keeps the compiler from moving reads or writes of the accumulator
// across the wgmma fences and waits (CUTLASS's warpgroup_fence_operand).
__device__ __forceinline__ void gw_pin(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}
// The fences: before the tensor cores read registers the CUDA cores wrote
// (gw_fence), after shared-memory stores that they will read
// (gw_fence_smem: st.shared is the generic proxy, wgmma's operand reads the
// async proxy). gw_commit closes the group of the wgmma issued since the
// last one; gw_wait waits until every committed group has written its
// accumulator (wait_group 0): until then the accumulator must be neither
// read nor written, and the shared memory the group reads not overwritten.
__device__ __forceinline__ void gw_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void gw_fence_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void gw_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void gw_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
#else
#define GW_SHARED(name) DYNAMIC_SHARED(unsigned char, name)
static unsigned gw_smem(const void* p) { return emu_shared_address(p); }
static unsigned gw_tf32(float v) { return emu_tf32_rna(v); }
static void gw_st4(unsigned a, unsigned x, unsigned y, unsigned z, unsigned w) { emu_st_shared4(a, x, y, z, w); }
static void gw_wgmma(float (&d)[64], unsigned long long a, unsigned long long b, int accumulate) {
    emu_wgmma_m64n128k8_tf32(d, a, b, accumulate);
}
static void gw_pin(float (&)[64]) {}
static void gw_fence() {}
static void gw_fence_smem() {}
static void gw_commit() { emu_wgmma_commit(); }
static void gw_wait() { emu_wgmma_wait(); }
#endif

// gw_desc is a wgmma matrix descriptor: start address, leading- and
// stride-dimension byte offsets, each in units of 16 bytes; no swizzling.
__device__ __forceinline__ unsigned long long gw_desc(unsigned saddr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((saddr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32);
}

// gw_load reads this thread's share of a tile of k into registers: rows
// [r0, r0+128) of a row-major [rows][k] matrix at columns [k0, k0+32), zeros
// past the last row; 4 float4s, 8 threads to a row's 128 bytes.
__device__ __forceinline__ void gw_load(float4 (&v)[4], const float* m, int rows, int k, int r0, int k0) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int p = threadIdx.x + 256 * i, r = r0 + (p >> 3), q = p & 7;
        v[i] = r < rows ? __ldg(reinterpret_cast<const float4*>(m + (size_t)r * k + k0 + q * 4)) : make_float4(0, 0, 0, 0);
    }
}

// gw_store splits the registers gw_load read into hi and lo and stores them into
// a stage's tiles (hi at hi, lo at hi + GW_TILE_BYTES).
__device__ __forceinline__ void gw_store(const float4 (&v)[4], unsigned hi) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int p = threadIdx.x + 256 * i, r = p >> 3, q = p & 7;
        unsigned a = hi + q * GW_COL_BYTES + r * 16;
        unsigned h0 = gw_tf32(v[i].x), h1 = gw_tf32(v[i].y), h2 = gw_tf32(v[i].z), h3 = gw_tf32(v[i].w);
        unsigned l0 = gw_tf32(__fsub_rn(v[i].x, __uint_as_float(h0))), l1 = gw_tf32(__fsub_rn(v[i].y, __uint_as_float(h1))),
                 l2 = gw_tf32(__fsub_rn(v[i].z, __uint_as_float(h2))), l3 = gw_tf32(__fsub_rn(v[i].w, __uint_as_float(h3)));
        gw_st4(a, h0, h1, h2, h3);
        gw_st4(a + GW_TILE_BYTES, l0, l1, l2, l3);
    }
}

// gw_out writes two adjacent outputs at p (8-byte aligned): a and b, or
// with add p's values plus s times them, each rounded once.
__device__ __forceinline__ void gw_out(float* p, float a, float b, int add, float s) {
    float2* q = reinterpret_cast<float2*>(p);
    if (add) {
        const float2 o = *q;
        a = fmaf(s, a, o.x), b = fmaf(s, b, o.y);
    }
    *q = make_float2(a, b);
}

// gw_store_stage splits and stores the next tile's x and W (registers
// gw_load read) into a stage, then fences them for the tensor cores (which
// read them after the __syncthreads that follows).
__device__ __forceinline__ void gw_store_stage(const float4 (&xv)[4], const float4 (&wv)[4], unsigned stage) {
    gw_store(xv, stage);
    gw_store(wv, stage + 2 * GW_TILE_BYTES);
    gw_fence_smem();
}

// gemm_wgmma is the body of the gemm_3xtf32 kernels (below, which say how to
// launch them): the tensor-core accumulator is added to the float32 sum
// every PROMOTE tiles of k. OVERLAP chooses the order of a tile's work;
// both orders compute the same operations on the same values, so give the
// same bits:
//
//   OVERLAP false (gemm_3xtf32_serial): load tile t+1 into registers; issue
//   tile t's 12 wgmma; wait for them; promote; split and store tile t+1 into
//   the other stage; __syncthreads. The tensor cores idle while the CUDA
//   cores split and store, and the CUDA cores wait while they work.
//
//   OVERLAP true (gemm_3xtf32, the backend's): issue tile t's 12 wgmma and
//   commit them; while they run, split and store tile t+1 (its registers
//   loaded during tile t−1) into the other stage and load tile t+2 into the
//   registers just freed; then wait; promote; __syncthreads.
//
// What makes the overlap legal (PTX ISA, wgmma.mma_async and wgmma.fence):
// the stores go to the stage the in-flight wgmma do not read (tile t+1's,
// last read by tile t−1's wgmma, which every warpgroup waited for before
// the previous __syncthreads); they touch neither the accumulator nor
// anything a wgmma reads from registers (its operands are in shared
// memory), and gw_pin keeps the compiler from moving the accumulator's
// reads (the promotion) above the wait; fence.proxy.async then the
// __syncthreads make the stores visible to the next tile's wgmma; and
// wgmma.fence precedes each tile's first wgmma, after the promotion read
// the accumulator that it overwrites.
//
// The block takes the tiles of k [kt0, kt0 + tiles) (tiles ≥ 1): all of k
// (kt0 = 0, tiles = k/32) in gemm_3xtf32, one slice of them in
// gemm_3xtf32_split.
template <int PROMOTE, bool OVERLAP>
__device__ __forceinline__ void gemm_wgmma(float* y, const float* x, const float* w, int rows, int n, int k, int ldy,
                                           int add, float s, unsigned lbo, unsigned sbo, int kt0, int tiles) {
    GW_SHARED(smem);
    const unsigned base = gw_smem(smem);
    const int wg = threadIdx.x >> 7;
    const int row0 = blockIdx.y * GW_TM, col0 = blockIdx.x * GW_TN;
    x += (size_t)kt0 * GW_TK, w += (size_t)kt0 * GW_TK; // the slice's first column (rows stay k apart)
    float acc[64], sum[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.f, sum[i] = 0.f;

    float4 xv[4], wv[4];
    gw_load(xv, x, rows, k, row0, 0);
    gw_load(wv, w, n, k, col0, 0);
    gw_store_stage(xv, wv, base);
    if (OVERLAP && tiles > 1) { // one tile further ahead: tile 1 is stored while tile 0's wgmma run
        gw_load(xv, x, rows, k, row0, GW_TK);
        gw_load(wv, w, n, k, col0, GW_TK);
    }
    __syncthreads();

    for (int t = 0; t < tiles; t++) {
        const unsigned stage = base + (t & 1) * GW_STAGE_BYTES, next = base + ((t + 1) & 1) * GW_STAGE_BYTES;
        if (!OVERLAP && t + 1 < tiles) { // the next tile's inputs, in flight while the tensor cores work
            gw_load(xv, x, rows, k, row0, (t + 1) * GW_TK);
            gw_load(wv, w, n, k, col0, (t + 1) * GW_TK);
        }
        const unsigned xhi = stage + wg * 64 * 16, xlo = xhi + GW_TILE_BYTES;
        const unsigned whi = stage + 2 * GW_TILE_BYTES, wlo = whi + GW_TILE_BYTES;
        gw_pin(acc);
        gw_fence();
#pragma unroll
        for (int s = 0; s < GW_TK / 8; s++) {
            const unsigned o = 2 * s * GW_COL_BYTES; // the k8 step's first k-quad column
            const int fresh = s == 0 && t % PROMOTE == 0;
            gw_wgmma(acc, gw_desc(xlo + o, lbo, sbo), gw_desc(whi + o, lbo, sbo), !fresh);
            gw_wgmma(acc, gw_desc(xhi + o, lbo, sbo), gw_desc(wlo + o, lbo, sbo), 1);
            gw_wgmma(acc, gw_desc(xhi + o, lbo, sbo), gw_desc(whi + o, lbo, sbo), 1);
        }
        gw_commit();
        if (OVERLAP) { // while the tensor cores work: the next stage, then the loads of the tile after it
            if (t + 1 < tiles) gw_store_stage(xv, wv, next);
            if (t + 2 < tiles) {
                gw_load(xv, x, rows, k, row0, (t + 2) * GW_TK);
                gw_load(wv, w, n, k, col0, (t + 2) * GW_TK);
            }
        }
        gw_wait();
        gw_pin(acc);
        if (t % PROMOTE == PROMOTE - 1 || t + 1 == tiles) {
#pragma unroll
            for (int i = 0; i < 64; i++) sum[i] = __fadd_rn(sum[i], acc[i]);
        }
        if (!OVERLAP && t + 1 < tiles) gw_store_stage(xv, wv, next);
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
        if (r < rows) gw_out(y + (size_t)r * ldy + col, sum[4 * j], sum[4 * j + 1], add, s);
        if (r + 8 < rows) gw_out(y + (size_t)(r + 8) * ldy + col, sum[4 * j + 2], sum[4 * j + 3], add, s);
    }
}

extern "C" {
// gemm_3xtf32: y = x · Wᵀ, the accumulator promoted every tile of k, the
// next tile stored while the tensor cores work (the backend's);
// gemm_3xtf32_serial the same in the order before (stored after the wait)
// and gemm_3xtf32_every2 promoted every second tile (overlapped), both for
// dev/cuda/gemm_wgmma.cu's comparison only. All three: grid (⌈n/128⌉,
// ⌈rows/128⌉), 256 threads, GW_SMEM_BYTES of dynamic shared memory; k a
// multiple of 32, n and ldy of 2, x and w 16-byte aligned, y 8-byte; add 0
// (y = x·Wᵀ) or 1 (y += s·x·Wᵀ). lbo and sbo are the shared-memory
// descriptors' offsets for this layout, GW_COL_BYTES and 128 (arguments so
// that a check can try them swapped).
__global__ void __launch_bounds__(256, 1) gemm_3xtf32(float* y, const float* x, const float* w, int rows, int n, int k,
                                                      int ldy, int add, float s, unsigned lbo, unsigned sbo) {
    gemm_wgmma<1, true>(y, x, w, rows, n, k, ldy, add, s, lbo, sbo, 0, k / GW_TK);
}
__global__ void __launch_bounds__(256, 1) gemm_3xtf32_serial(float* y, const float* x, const float* w, int rows, int n,
                                                             int k, int ldy, int add, float s, unsigned lbo, unsigned sbo) {
    gemm_wgmma<1, false>(y, x, w, rows, n, k, ldy, add, s, lbo, sbo, 0, k / GW_TK);
}
__global__ void __launch_bounds__(256, 1) gemm_3xtf32_every2(float* y, const float* x, const float* w, int rows, int n,
                                                             int k, int ldy, int add, float s, unsigned lbo, unsigned sbo) {
    gemm_wgmma<2, true>(y, x, w, rows, n, k, ldy, add, s, lbo, sbo, 0, k / GW_TK);
}

// gemm_3xtf32_split is gemm_3xtf32 with k split in slices (split k: for a
// grid of 128 × 128 blocks that would leave multiprocessors idle, more
// blocks): grid (⌈n/128⌉, ⌈rows/128⌉, slices), 256 threads,
// GW_SMEM_BYTES of dynamic shared memory, 1 ≤ slices ≤ k/32, the other
// requirements gemm_3xtf32's. Block z takes the tiles of k [⌊z·T/S⌋,
// ⌊(z+1)·T/S⌋) of T = k/32 (contiguous, their counts differing by one at
// most) and writes its float32 sum over them, in gemm_3xtf32's order
// (promoted every tile), to part [z][rows][n] with plain stores;
// gemm_3xtf32_reduce then adds the slices. Each output of a slice is one
// thread's fixed sequence of operations, as in gemm_3xtf32.
__global__ void __launch_bounds__(256, 1) gemm_3xtf32_split(float* part, const float* x, const float* w, int rows, int n,
                                                            int k, int slices, unsigned lbo, unsigned sbo) {
    const int tiles = k / GW_TK, z = blockIdx.z;
    const int t0 = (int)((long long)tiles * z / slices), t1 = (int)((long long)tiles * (z + 1) / slices);
    gemm_wgmma<1, true>(part + (size_t)z * rows * n, x, w, rows, n, k, n, 0, 1.f, lbo, sbo, t0, t1 - t0);
}

// gemm_3xtf32_reduce adds gemm_3xtf32_split's slices: each output's sum
// p0 + p1 + … + p(S−1) of part [S][rows][n], in that order, each addition
// rounded to nearest in float32, written to y [rows][ldy] (columns [0, n))
// as gemm_3xtf32 writes its sum: y = sum, or with add fmaf(s, sum, y).
// Whatever the blocks' scheduling, an output's bits are those of its own
// fixed sequence of operations. A grid-stride loop over the rows·n/2 pairs
// of outputs (n and ldy even, part and y 8-byte aligned), 256 threads a
// block.
__global__ void __launch_bounds__(256) gemm_3xtf32_reduce(float* y, const float* part, int rows, int n, int ldy,
                                                          int slices, int add, float s) {
    const size_t outputs = (size_t)rows * n, pairs = outputs / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pairs; i += (size_t)gridDim.x * blockDim.x) {
        float2 sum = reinterpret_cast<const float2*>(part)[i];
        for (int z = 1; z < slices; z++) {
            const float2 p = reinterpret_cast<const float2*>(part + (size_t)z * outputs)[i];
            sum.x = __fadd_rn(sum.x, p.x), sum.y = __fadd_rn(sum.y, p.y);
        }
        const size_t r = 2 * i / n, c = 2 * i % n;
        gw_out(y + r * ldy + c, sum.x, sum.y, add, s);
    }
}
} // extern "C"
