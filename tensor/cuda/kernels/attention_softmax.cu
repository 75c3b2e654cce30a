// The batched-GEMM attention's middle step (the GEMMs are cuBLAS's).

#include "common.cuh"
#include "softmax_row.cuh"

extern "C" {

// attention_softmax is the middle step of attention through two batched
// GEMMs (the backend's "gemm" attention, $MEAZO_CUDA_ATTENTION=gemm): cuBLAS
// has written the raw scores q·k_j of every (sequence s, query head h, new
// token t) for the slots j < n into the row sc[((s·heads+h)·tokens+t)·n …];
// one block per row turns them into probabilities in place with attention's
// arithmetic from the scores on (scale, masks, max, Exp, the float64
// normaliser in 16 ordered partial sums, p·(1/sum)), zeros past the query's
// slot, so that the second GEMM (p·V) sums over every j < n. A query that
// sees no key gets a row of zeros, so its output is 0·V: zeros where V is
// finite (of either sign; the other kernels write +0). Shared memory: n floats.
__global__ void attention_softmax(float* sc, const int* mask, int tokens, int heads, int n, int capacity,
                                  int start, int window, float scale) {
    DYNAMIC_SHARED(float, p); // [n]
    int t = blockIdx.x, h = blockIdx.y, s = blockIdx.z;
    int qslot = start + t, nv = qslot + 1; // the slots this query may see
    long long row = ((long long)s * heads + h) * tokens + t;
    float* r = sc + row * n;
    const int* m = mask + (long long)s * capacity;
    float mx = NEG_INF;
    for (int j = threadIdx.x; j < nv; j += blockDim.x) {
        float v = NEG_INF;
        if (m[j] == 1 && (window <= 0 || qslot - j < window)) v = __fmul_rn(r[j], scale);
        p[j] = v;
        mx = max_nan(mx, v);
    }
    bool seen = softmax_row(p, nv, mx);
    for (int j = threadIdx.x; j < n; j += blockDim.x) r[j] = seen && j < nv ? p[j] : 0.0f; // no visible key: zeros, never NaN
}

} // extern "C"
