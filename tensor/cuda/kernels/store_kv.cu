// The KV cache's writes: a step's new keys and values into their slots.

#include "common.cuh"

extern "C" {

// store_kv writes the new keys and values k, v [seqs·tokens][kv_heads·hd] at
// cache slots start … start+tokens−1. Cache layout per layer: keys
// [cache_seqs][kv_heads][hd][capacity] (transposed, so that attention reads
// them coalesced across slots), values [cache_seqs][kv_heads][capacity][hd].
// One block of 256 threads per (32 new tokens, kv head, sequence): blockIdx
// (x, y, z). The keys go through a 32×32 tile in shared memory, read along
// the dimensions and written along the slots, so that both sides are
// contiguous across a warp; the values are copied row by row.
__global__ void store_kv(float* kc, float* vc, const float* k, const float* v, int seqs, int tokens,
                         int kv_heads, int hd, int capacity, int start) {
    __shared__ float tile[32][33]; // padded: a column read hits 32 banks
    int g = blockIdx.y, s = blockIdx.z, t0 = blockIdx.x * 32;
    int lane = threadIdx.x % 32, row = threadIdx.x / 32; // 8 rows of 32 lanes
    long long head = (long long)s * kv_heads + g;
    for (int d0 = 0; d0 < hd; d0 += 32) {
        for (int tt = row; tt < 32; tt += 8) // tile[token][dim] from k, along the dimensions
            if (t0 + tt < tokens && d0 + lane < hd)
                tile[tt][lane] = k[(((long long)s * tokens + t0 + tt) * kv_heads + g) * hd + d0 + lane];
        __syncthreads();
        for (int dd = row; dd < 32; dd += 8) // to the cache along the slots
            if (t0 + lane < tokens && d0 + dd < hd)
                kc[(head * hd + d0 + dd) * capacity + start + t0 + lane] = tile[lane][dd];
        __syncthreads();
    }
    for (int tt = row; tt < 32 && t0 + tt < tokens; tt += 8) {
        const float* src = v + (((long long)s * tokens + t0 + tt) * kv_heads + g) * hd;
        float* dst = vc + (head * capacity + start + t0 + tt) * hd;
        for (int d = lane; d < hd; d += 32) dst[d] = src[d];
    }
}

} // extern "C"
