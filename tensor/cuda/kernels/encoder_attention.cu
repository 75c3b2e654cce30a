// Attention without a causal mask or a cache (a ViT encoder's).

#include "common.cuh"

extern "C" {

// encoder_attention: one block per (query token, head, sequence) of
// q, k, v, out [seqs·tokens][heads·hd], the CPU backend's EncoderAttention
// operation by operation: scores (float64 sums of exact products in
// dimension order, rounded, times scale) into shared memory, the largest,
// Exp of the differences, their float64 sum in token order, probabilities
// rounded to float32, and each output dimension's float64 sum in token order.
// Dynamic shared memory: tokens floats.
__global__ void encoder_attention(float* out, const float* q, const float* k, const float* v, int tokens, int heads,
                                  int hd, float scale) {
    DYNAMIC_SHARED(float, p); // [tokens]
    __shared__ float m;
    __shared__ double sum;
    const long long width = (long long)heads * hd;
    const long long base = (long long)blockIdx.z * tokens * width + (long long)blockIdx.y * hd;
    const float* qi = q + base + (long long)blockIdx.x * width;
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        const float* kj = k + base + (long long)j * width;
        double dot = 0;
        for (int d = 0; d < hd; d++) dot = __dadd_rn(dot, __dmul_rn((double)qi[d], (double)kj[d]));
        p[j] = __fmul_rn(__double2float_rn(dot), scale);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float mm = NEG_INF;
        for (int j = 0; j < tokens; j++) mm = p[j] > mm ? p[j] : mm;
        m = mm;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) p[j] = cephes_expf(__fsub_rn(p[j], m));
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0;
        for (int j = 0; j < tokens; j++) s = __dadd_rn(s, (double)p[j]);
        sum = s;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) p[j] = __double2float_rn(__ddiv_rn((double)p[j], sum));
    __syncthreads();
    float* o = out + base + (long long)blockIdx.x * width;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        double acc = 0;
        for (int j = 0; j < tokens; j++) acc = __dadd_rn(acc, __dmul_rn((double)p[j], (double)v[base + (long long)j * width + d]));
        o[d] = __double2float_rn(acc);
    }
}

} // extern "C"
