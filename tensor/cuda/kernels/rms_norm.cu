// RMSNorm, a block per row or, for narrow rows, a warp per row (the same bits).

#include "common.cuh"

extern "C" {

// rms_norm: one block of 16·k threads per row. As the CPU backend: the mean
// of squares in float64, element j added into partial sum j mod 16 in order,
// the 16 partials added in order; variance rounded to float32; the scale
// 1/sqrt(variance+eps) computed in float64 and rounded to float32;
// dst[j] = w[j]·(x[j]·scale). dst may be x.
__global__ void rms_norm(float* dst, const float* x, const float* w, int n, float eps) {
    __shared__ double part[16];
    __shared__ float scale;
    const float* xr = x + (long long)blockIdx.x * n;
    float* dr = dst + (long long)blockIdx.x * n;
    if (threadIdx.x < 16) part[threadIdx.x] = square_part(xr, n, threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) scale = inv_std_of_parts(part, n, eps);
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) dr[j] = __fmul_rn(w[j], __fmul_rn(xr[j], scale));
}

// rms_norm_narrow is rms_norm for narrow rows (Qwen3's per-head q/k norms,
// of 128): a warp per row, 8 rows per block of 256 threads, instead of a
// block per row that leaves most of its threads idle. The same arithmetic
// in the same order, so the same bits.
__global__ void rms_norm_narrow(float* dst, const float* x, const float* w, int rows, int n, float eps) {
    __shared__ double part[8][16];
    __shared__ float scale[8];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    long long row = (long long)blockIdx.x * 8 + warp;
    bool live = row < rows;
    const float* xr = x + row * n;
    float* dr = dst + row * n;
    if (live && lane < 16) part[warp][lane] = square_part(xr, n, lane);
    __syncthreads();
    if (live && lane == 0) scale[warp] = inv_std_of_parts(part[warp], n, eps);
    __syncthreads();
    if (live)
        for (int j = lane; j < n; j += 32) dr[j] = __fmul_rn(w[j], __fmul_rn(xr[j], scale[warp]));
}

} // extern "C"
