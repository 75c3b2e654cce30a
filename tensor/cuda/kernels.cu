// The CUDA backend's own kernels (the matrix products are cuBLAS's). They are
// compiled to PTX for compute_80 by NVRTC (go generate; see gen.go) and the
// driver compiles that PTX for the GPU at hand (A100, H100, ...).
//
// Rules that keep the results reproducible and close to the CPU backend's:
// - Every output element is computed by one thread in a fixed order; every
//   reduction is a fixed tree in shared memory. No atomics on floats, so a
//   run is bit-identical to itself.
// - Element-wise arithmetic uses the explicitly rounded intrinsics
//   (__fmul_rn, __fadd_rn, ...), which the compiler may not contract into
//   fused multiply-adds, so that it rounds as the CPU backend's Go code does;
//   where the CPU kernels use fused multiply-adds (the dot products of
//   attention), so do these (fmaf). Exp is the CPU backend's Cephes expf,
//   transcribed operation by operation. Where the CPU reduces in float64 in 16
//   partial sums (RMSNorm, the softmax normaliser), these kernels do the same
//   in the same order, so RMSNorm, SiLU, RoPE, the adds and attention give the
//   CPU backend's bits for the same inputs on amd64 (where Go rounds every
//   float32 operation; on arm64 Go may fuse them); cross-entropy's reduction
//   and cuBLAS's GEMMs sum in other orders (so does the attention through
//   cuBLAS, around attention_softmax, which calls from 256 slots take).

#define NEG_INF __int_as_float(0xff800000)

// A kernel's dynamic shared memory (the emulator in emu/ defines its own).
#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

// Grid-stride loops over n elements (n may exceed 2^31).
#define FOR_EACH(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// cephes_expf is the CPU backend's Exp (tensor/cpu/ops.go): Cephes expf,
// about 1 ulp, 0 below -87.3, +Inf above 88.7.
__device__ __forceinline__ float cephes_expf(float x) {
    const float hi = 88.72283f, lo = -87.33654f;
    const float log2e = 1.44269504088896341f, c1 = 0.693359375f, c2 = -2.12194440e-4f;
    if (x != x) return x;
    if (x > hi) return __int_as_float(0x7f800000);
    if (x < lo) return 0.0f;
    float k = (float)floor((double)__fadd_rn(__fmul_rn(x, log2e), 0.5f));
    float r = __fsub_rn(__fsub_rn(x, __fmul_rn(k, c1)), __fmul_rn(k, c2));
    float p = 1.9875691500e-4f;
    p = __fadd_rn(__fmul_rn(p, r), 1.3981999507e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 8.3334519073e-3f);
    p = __fadd_rn(__fmul_rn(p, r), 4.1665795894e-2f);
    p = __fadd_rn(__fmul_rn(p, r), 1.6666665459e-1f);
    p = __fadd_rn(__fmul_rn(p, r), 5.0000001201e-1f);
    p = __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(p, r), r), r), 1.0f);
    if (k > 127.0f) return __fmul_rn(__fmul_rn(p, 2.0f), __int_as_float(254 << 23));
    return __fmul_rn(p, __int_as_float(((int)k + 127) << 23));
}

// softmax_row turns a block's row of n scores p[0..n) (−Inf where masked;
// mx: the largest this thread wrote) into probabilities in place, as the
// CPU backend does: the max over the block, p = Exp(score − max), the
// normaliser in float64 in 16 partial sums over j ≡ r (mod 16) in slot
// order, then p ·= float32(1/sum). It returns false, and leaves p as it
// was, when every score is −Inf (a query that sees no key). Every thread of
// the block (at most 256) must call it.
__device__ bool softmax_row(float* p, int n, float mx) {
    __shared__ float red[256];
    __shared__ double part[16];
    __shared__ float inv;
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) { // max is exact in any order
        if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
        __syncthreads();
    }
    mx = red[0];
    if (mx == NEG_INF) return false;
    for (int j = threadIdx.x; j < n; j += blockDim.x) p[j] = cephes_expf(__fsub_rn(p[j], mx));
    __syncthreads();
    if (threadIdx.x < 16) {
        double sum = 0;
        for (int j = threadIdx.x; j < n; j += 16) sum = __dadd_rn(sum, (double)p[j]);
        part[threadIdx.x] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0;
        for (int i = 0; i < 16; i++) sum = __dadd_rn(sum, part[i]);
        inv = __double2float_rn(__ddiv_rn(1.0, sum));
    }
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) p[j] = __fmul_rn(p[j], inv);
    __syncthreads();
    return true;
}

extern "C" {

// y[i] += x[i]
__global__ void add(float* y, const float* x, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], x[i]);
}

// y[i] += x[i]·s
__global__ void add_scaled(float* y, const float* x, float s, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], __fmul_rn(x[i], s));
}

// gate[i] = silu(gate[i])·up[i] = gate[i] / (1 + exp(-gate[i])) · up[i]
__global__ void silu_mul(float* gate, const float* up, long long n) {
    FOR_EACH(i, n) {
        float g = gate[i];
        gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, cephes_expf(-g))), up[i]);
    }
}

// dst[i] = float32(src[i] as bfloat16 bits): exact widening.
__global__ void bf16_to_f32(float* dst, const unsigned short* src, long long n) {
    FOR_EACH(i, n) dst[i] = __int_as_float(((unsigned int)src[i]) << 16);
}

// dst[i] = src[ids[i]] for rows of width floats; one block per output row.
__global__ void gather_rows(float* dst, const float* src, int width, const int* ids) {
    const float* s = src + (long long)ids[blockIdx.x] * width;
    float* d = dst + (long long)blockIdx.x * width;
    for (int j = threadIdx.x; j < width; j += blockDim.x) d[j] = s[j];
}

// gather_rows from a bfloat16 matrix, widened exactly.
__global__ void gather_rows_bf16(float* dst, const unsigned short* src, int width, const int* ids) {
    const unsigned short* s = src + (long long)ids[blockIdx.x] * width;
    float* d = dst + (long long)blockIdx.x * width;
    for (int j = threadIdx.x; j < width; j += blockDim.x) d[j] = __int_as_float(((unsigned int)s[j]) << 16);
}

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
    if (threadIdx.x < 16) {
        double s = 0;
        for (int j = threadIdx.x; j < n; j += 16) s = fma((double)xr[j], (double)xr[j], s); // the product is exact in float64
        part[threadIdx.x] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0;
        for (int p = 0; p < 16; p++) s = __dadd_rn(s, part[p]);
        float variance = __double2float_rn(__ddiv_rn(s, (double)n));
        scale = __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)__fadd_rn(variance, eps))));
    }
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
    if (live && lane < 16) {
        double s = 0;
        for (int j = lane; j < n; j += 16) s = fma((double)xr[j], (double)xr[j], s); // the product is exact in float64
        part[warp][lane] = s;
    }
    __syncthreads();
    if (live && lane == 0) {
        double s = 0;
        for (int p = 0; p < 16; p++) s = __dadd_rn(s, part[warp][p]);
        float variance = __double2float_rn(__ddiv_rn(s, (double)n));
        scale[warp] = __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)__fadd_rn(variance, eps))));
    }
    __syncthreads();
    if (live)
        for (int j = lane; j < n; j += 32) dr[j] = __fmul_rn(w[j], __fmul_rn(xr[j], scale[warp]));
}

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
        mx = fmaxf(mx, sc);
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
                    mx[i] = fmaxf(mx[i], sc[i]);
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
        for (int l = 0; l < 32; l++) mi = fmaxf(mi, red[i][l]);
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
        mx = fmaxf(mx, v);
    }
    bool seen = softmax_row(p, nv, mx);
    for (int j = threadIdx.x; j < n; j += blockDim.x) r[j] = seen && j < nv ? p[j] : 0.0f; // no visible key: zeros, never NaN
}

// cross_entropy: one block of 256 threads per requested row ids[b] of
// logits [*][width]: out[b] = logsumexp(row) − row[targets[b]] in float64
// (max, then a fixed-tree sum of exp(x − max)).
__global__ void cross_entropy(double* out, const float* logits, int width, const int* ids, const int* targets) {
    __shared__ float mred[256];
    __shared__ double sred[256];
    const float* r = logits + (long long)ids[blockIdx.x] * width;
    float mx = NEG_INF;
    for (int j = threadIdx.x; j < width; j += blockDim.x) mx = fmaxf(mx, r[j]);
    mred[threadIdx.x] = mx;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) mred[threadIdx.x] = fmaxf(mred[threadIdx.x], mred[threadIdx.x + w]);
        __syncthreads();
    }
    double m = (double)mred[0];
    double s = 0;
    for (int j = threadIdx.x; j < width; j += blockDim.x) s += exp((double)r[j] - m);
    sred[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sred[threadIdx.x] += sred[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = m + log(sred[0]) - (double)r[targets[blockIdx.x]];
}

// argmax: one block of 256 threads per row of x [rows][width]: the index of
// the largest value, the first one on ties, as a left-to-right scan that
// moves to column i when x[i] > x[best]: a NaN never takes over, and a NaN in
// column 0 keeps it.
__global__ void argmax(int* out, const float* x, int width) {
    __shared__ float bv[256];
    __shared__ int bi[256];
    const float* r = x + (long long)blockIdx.x * width;
    float v = NEG_INF;
    int best = 0x7fffffff;
    for (int j = threadIdx.x; j < width; j += blockDim.x) {
        float e = r[j];
        if (e == e && (best == 0x7fffffff || e > v)) v = e, best = j; // strided j rises: ties keep the first
    }
    bv[threadIdx.x] = v;
    bi[threadIdx.x] = best;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            float ov = bv[threadIdx.x + w];
            int oi = bi[threadIdx.x + w];
            if (oi != 0x7fffffff && (bi[threadIdx.x] == 0x7fffffff || ov > bv[threadIdx.x] ||
                                     (ov == bv[threadIdx.x] && oi < bi[threadIdx.x]))) {
                bv[threadIdx.x] = ov;
                bi[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = (r[0] != r[0] || bi[0] == 0x7fffffff) ? 0 : bi[0];
}
} // extern "C"
