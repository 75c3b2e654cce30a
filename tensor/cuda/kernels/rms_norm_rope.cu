// A per-head RMSNorm and RoPE in one pass (Qwen3's q and k norms, which
// precede the rotation): the same bits as rms_norm_narrow then rope, two
// launches and a read and write of q and k fewer per layer.

#include "common.cuh"

extern "C" {

// rms_norm_rope normalises each head of width hd in every row of x
// [rows][heads·hd] in place with weight w [hd], as rms_norm_narrow does,
// and rotates it as rope does with row r's table row r mod table_rows of
// cos and sin [table_rows][hd/2]. A warp per head, 8 heads per block of
// 256 threads: lanes 0-15 sum the squares, then lane i takes pairs i, i+32,
// … of the head, each element normalised (rounded to float32, as the norm
// writes it) and then rotated.
__global__ void rms_norm_rope(float* x, const float* w, long long rows, int heads, int hd, float eps, const float* cos,
                              const float* sin, int table_rows) {
    __shared__ double part[8][16];
    __shared__ float scale[8];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    long long head = (long long)blockIdx.x * 8 + warp; // of rows·heads
    bool live = head < rows * heads;
    float* xr = x + head * hd;
    if (live && lane < 16) part[warp][lane] = square_part(xr, hd, lane);
    __syncthreads();
    if (live && lane == 0) scale[warp] = inv_std_of_parts(part[warp], hd, eps);
    __syncthreads();
    if (!live) return;
    int half = hd / 2;
    long long t = (head / heads) % table_rows * half;
    float sc = scale[warp];
    for (int i = lane; i < half; i += 32) {
        float a = __fmul_rn(w[i], __fmul_rn(xr[i], sc)), b = __fmul_rn(w[i + half], __fmul_rn(xr[i + half], sc));
        float c = cos[t + i], s = sin[t + i];
        xr[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
        xr[i + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
    }
}

} // extern "C"
