// Fused attention, one block per query (the CPU backend's bits; decoding).

#include "common.cuh"
#include "softmax_row.cuh"

extern "C" {

// attention: one block per (new token t, query head h, sequence s); the
// query sits at slot start+t and sees the slots j <= start+t with
// mask[s·capacity+j] == 1 and, if window > 0, start+t−j < window. As the CPU
// backend: score_j = (q·k_j, a fused multiply-add chain over the head's
// dimensions in order) · scale; masked scores −Inf; p = Exp(score − max);
// the normaliser in float64 in 16 ordered partial sums; p_j ·= float32(1/sum);
// out[d] = fused multiply-add chain of p_j·v_j[d] over j in order. A query
// that sees no key gets zeros. Shared memory: hd + capacity floats.
__global__ void attention(float* out, const float* q, const float* kc, const float* vc, const int* mask,
                          int tokens, int heads, int kv_heads, int hd, int capacity, int start, int window,
                          float scale) {
    DYNAMIC_SHARED(float, sh);
    float* qs = sh;           // [hd]
    float* p = sh + hd;       // [capacity]
    int t = blockIdx.x, h = blockIdx.y, s = blockIdx.z;
    int rep = heads / kv_heads, g = h / rep;
    int qslot = start + t, n = qslot + 1;
    long long row = ((long long)s * tokens + t) * heads + h; // this query's [hd] vector in q and out
    const float* kh = kc + ((long long)s * kv_heads + g) * hd * capacity;
    const float* vh = vc + ((long long)s * kv_heads + g) * capacity * hd;
    const int* m = mask + (long long)s * capacity;

    for (int d = threadIdx.x; d < hd; d += blockDim.x) qs[d] = q[row * hd + d];
    __syncthreads();
    float mx = NEG_INF;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float sc = NEG_INF;
        if (m[j] == 1 && (window <= 0 || qslot - j < window)) {
            float acc = 0.0f;
            for (int d = 0; d < hd; d++) acc = fmaf(qs[d], kh[(long long)d * capacity + j], acc);
            sc = __fmul_rn(acc, scale);
        }
        p[j] = sc;
        mx = max_nan(mx, sc);
    }
    float* o = out + row * hd;
    if (!softmax_row(p, n, mx)) { // no visible key: zeros, never NaN
        for (int d = threadIdx.x; d < hd; d += blockDim.x) o[d] = 0.0f;
        return;
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++) acc = fmaf(p[j], vh[(long long)j * hd + d], acc);
        o[d] = acc;
    }
}

} // extern "C"
