// Rotary position embeddings.

#include "common.cuh"

extern "C" {

// rope rotates each head of width hd in every row of x [rows][heads·hd]
// (HF's rotate_half: dimension i pairs with i+hd/2), row r using table row
// r mod table_rows of cos and sin [table_rows][hd/2]. A block holds
// blockDim.x / (hd/2) rows (the launch makes blockDim.x a multiple of
// hd/2); thread i of a row reads its cos and sin once and rotates pair i of
// every head, so a warp's loads and stores are contiguous and no thread
// divides a 64-bit index.
__global__ void rope(float* x, long long rows, int heads, int hd, const float* cos, const float* sin, int table_rows) {
    int half = hd / 2;
    long long r = (long long)blockIdx.x * (blockDim.x / half) + threadIdx.x / half;
    int i = threadIdx.x % half;
    if (r >= rows) return;
    long long t = (r % table_rows) * half + i;
    float c = cos[t], s = sin[t];
    float* v = x + r * heads * hd;
    for (int h = 0; h < heads; h++, v += hd) {
        float a = v[i], b = v[i + half];
        v[i] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
        v[i + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
    }
}

} // extern "C"
