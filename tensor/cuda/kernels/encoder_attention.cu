// Attention without a causal mask or a cache (a ViT encoder's), by two paths
// (encoder.go chooses): encoder_attention, exact, a block per query, which
// gives the CPU backend's bits; and encoder_softmax, the middle step of the
// path through two batched cuBLAS GEMMs (encoderAttentionGEMM: raw scores
// q·kᵀ, encoder_softmax, then p·V), which sums in cuBLAS's order and so is
// within float32 rounding of the CPU backend, not its bits. Neither has been
// timed against the other on a GPU yet (not run on a GPU).

#include "common.cuh"
#include "softmax_row.cuh"

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

// encoder_softmax turns rows of raw scores into probabilities in place:
// cuBLAS has written q·k_j of query t against every key j of one (sequence,
// head) pair p of the group into sc[(p·tokens + t)·tokens + j]; one block per
// (t, p) scales them, then softmax_row (attention_softmax's arithmetic: the
// max, Exp of the differences, the float64 normaliser in 16 ordered partial
// sums, p·float32(1/sum)). A row whose scores are all −Inf (only from
// infinite inputs) becomes NaN, as the exact kernel and the CPU backend give
// it (Exp(−Inf − −Inf)). Dynamic shared memory: tokens floats.
__global__ void encoder_softmax(float* sc, int tokens, float scale) {
    DYNAMIC_SHARED(float, p); // [tokens]
    float* r = sc + ((long long)blockIdx.y * tokens + blockIdx.x) * tokens;
    float mx = NEG_INF;
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        float v = __fmul_rn(r[j], scale);
        p[j] = v;
        mx = fmaxf(mx, v);
    }
    bool seen = softmax_row(p, tokens, mx);
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) r[j] = seen ? p[j] : __int_as_float(0x7fc00000);
}

} // extern "C"
