// Fused attention over tiles of queries (attention.cu's bits, keys and values
// read once per tile).

#include "common.cuh"

extern "C" {

// attention_tiled is attention for a tile of tq consecutive new tokens (tq =
// 8, 16 or 32; blockIdx.x is the tile) of one query head and sequence per
// block: every output gets attention's arithmetic in attention's order, so
// the same bits, but keys and values are read once per tile instead of once
// per query, and each thread keeps an 8-query × 4-key (scores) or 8-query ×
// 4-dimension (outputs) block of products in registers, reading its queries'
// values with two 16-byte shared loads. (attention re-reads the head's whole
// cache for every query. On an H200 this kernel takes 2-7 % off a Qwen3-0.6B
// forward, heads of 128, and is slower with heads of 64 and 512 keys, so the
// backend picks it by head width; the first tiled version, a thread per key
// over 8 queries, one shared load per fused multiply-add, was no faster than
// attention.) Warp w owns the tile's queries
// 8w … 8w+7 in the score and output phases, lane l the keys j0+l+32c and the
// dimensions l+32c (c < 4). Needs 128 threads and hd ≤ 128. Shared memory:
// the queries transposed, qs[hd][tq], and the scores, then probabilities,
// pt[capacity][tq+4] (rows padded so that the lanes' 16-byte stores hit
// different banks): 4·(hd·tq + capacity·(tq+4)) bytes.
#define ATTN_TQ 32
__global__ void attention_tiled(float* out, const float* q, const float* kc, const float* vc, const int* mask,
                                int tokens, int heads, int kv_heads, int hd, int capacity, int start, int window,
                                float scale, int tq) {
    DYNAMIC_SHARED(float, sh);
    int ps = tq + 4;         // pt's row stride
    float* qs = sh;          // [hd][tq]
    float* pt = sh + hd * tq; // [capacity][ps]
    __shared__ float red[ATTN_TQ][32]; // per query: the lanes' maxima, then the max in [i][0]
    __shared__ double part[ATTN_TQ][16];
    __shared__ float inv[ATTN_TQ];
    int t0 = blockIdx.x * tq, h = blockIdx.y, s = blockIdx.z;
    int nq = tokens - t0 < tq ? tokens - t0 : tq;
    int rep = heads / kv_heads, g = h / rep;
    int first = start + t0;  // the tile's first query's slot; query i sees the slots j <= first+i
    int n = first + nq;      // slots any query of the tile sees
    const float* kh = kc + ((long long)s * kv_heads + g) * hd * capacity;
    const float* vh = vc + ((long long)s * kv_heads + g) * capacity * hd;
    const int* m = mask + (long long)s * capacity;
    long long row0 = ((long long)s * tokens + t0) * heads + h; // query i's [hd] vector: row0 + i·heads
    int lane = threadIdx.x % 32, q0 = threadIdx.x / 32 * 8;  // this warp's first query
    bool active = q0 < nq;

    for (int e = threadIdx.x; e < tq * hd; e += blockDim.x) {
        int i = e / hd, d = e % hd;
        qs[d * tq + i] = i < nq ? q[(row0 + (long long)i * heads) * hd + d] : 0.0f;
    }
    __syncthreads();
    // Scores of 8 queries × 4 keys per thread, 128 keys per pass.
    if (active) {
        float mx[8];
#pragma unroll
        for (int i = 0; i < 8; i++) mx[i] = NEG_INF;
        for (int j0 = 0; j0 < n; j0 += 128) {
            int kn = (n - j0 + 31) / 32; // key groups of 32 left in this pass (the same for the whole warp)
            float acc[8][4];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[i][c] = 0.0f;
#pragma unroll 4
            for (int d = 0; d < hd; d++) {
                float4 qa = *(const float4*)&qs[d * tq + q0], qb = *(const float4*)&qs[d * tq + q0 + 4];
                float qv[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
                const float* kd = kh + (long long)d * capacity;
                float kv[4];
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    int j = j0 + lane + 32 * c;
                    kv[c] = j < n ? kd[j] : 0.0f;
                }
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        if (c < kn) acc[i][c] = fmaf(qv[i], kv[c], acc[i][c]);
            }
#pragma unroll
            for (int c = 0; c < 4; c++) {
                int j = j0 + lane + 32 * c;
                if (j >= n) break;
                bool ok = m[j] == 1;
                float sc[8];
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    int qslot = first + q0 + i;
                    sc[i] = NEG_INF;
                    if (q0 + i < nq && ok && j <= qslot && (window <= 0 || qslot - j < window)) sc[i] = __fmul_rn(acc[i][c], scale);
                    mx[i] = max_nan(mx[i], sc[i]);
                }
                *(float4*)&pt[j * ps + q0] = make_float4(sc[0], sc[1], sc[2], sc[3]);
                *(float4*)&pt[j * ps + q0 + 4] = make_float4(sc[4], sc[5], sc[6], sc[7]);
            }
        }
#pragma unroll
        for (int i = 0; i < 8; i++) red[q0 + i][lane] = mx[i];
    }
    __syncthreads();
    if (threadIdx.x < nq) { // each query's max (exact in any order)
        int i = threadIdx.x;
        float mi = NEG_INF;
        for (int l = 0; l < 32; l++) mi = max_nan(mi, red[i][l]); // a NaN score: the row NaN
        red[i][0] = mi;
    }
    __syncthreads();
    // Softmax of each query's row over its slots j <= first+i; a query that
    // sees no key (max −Inf) gets zeros below. Lane i takes query i (tq <=
    // 32), the warps take the slots in turn: no division by nq, and a
    // warp's accesses to a row of pt are consecutive.
    int nw = blockDim.x / 32, warp = threadIdx.x / 32;
    float mi = lane < nq ? red[lane][0] : NEG_INF;
    if (mi != NEG_INF)
        for (int j = warp; j <= first + lane; j += nw) pt[j * ps + lane] = cephes_expf(__fsub_rn(pt[j * ps + lane], mi));
    __syncthreads();
    if (lane < nq)
        for (int r = warp; r < 16; r += nw) {
            double sum = 0;
            for (int j = r; j <= first + lane; j += 16) sum = __dadd_rn(sum, (double)pt[j * ps + lane]);
            part[lane][r] = sum;
        }
    __syncthreads();
    if (threadIdx.x < nq) {
        int i = threadIdx.x;
        double sum = 0;
        for (int r = 0; r < 16; r++) sum = __dadd_rn(sum, part[i][r]);
        inv[i] = __double2float_rn(__ddiv_rn(1.0, sum));
    }
    __syncthreads();
    if (mi != NEG_INF) {
        float s = inv[lane];
        for (int j = warp; j <= first + lane; j += nw) pt[j * ps + lane] = __fmul_rn(pt[j * ps + lane], s);
    }
    __syncthreads();
    // Outputs of 8 queries × 4 dimensions per thread; query i sums over j <= first+i.
    if (active) {
        float acc[8][4];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][c] = 0.0f;
        int last = first + (q0 + 8 < nq ? q0 + 8 : nq) - 1; // this warp's last query's slot
        int dn = (hd + 31) / 32; // dimension groups of 32
#pragma unroll 2
        for (int j = 0; j <= last; j++) {
            float4 pa = *(const float4*)&pt[j * ps + q0], pb = *(const float4*)&pt[j * ps + q0 + 4];
            float pv[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
            const float* vj = vh + (long long)j * hd;
            float vv[4];
#pragma unroll
            for (int c = 0; c < 4; c++) {
                int d = lane + 32 * c;
                vv[c] = d < hd ? vj[d] : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (j <= first + q0 + i) // the same for the whole warp
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        if (c < dn) acc[i][c] = fmaf(pv[i], vv[c], acc[i][c]);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            if (q0 + i >= nq) break;
            float* o = out + (row0 + (long long)(q0 + i) * heads) * hd;
            bool none = red[q0 + i][0] == NEG_INF;
#pragma unroll
            for (int c = 0; c < 4; c++) {
                int d = lane + 32 * c;
                if (d < hd) o[d] = none ? 0.0f : acc[i][c];
            }
        }
    }
}

} // extern "C"
