// The in-place update of full-parameter ZO (tensor.Trainer's UpdateWeight
// and UpdateVector): for every element, ĝ = Σ_j w_j·z_j drawn again from
// the directions' streams, then the optimizer's element-wise rule (package
// update: Rule.Target, Apply, ApplyBF16) in float64, operation for
// operation in Go's order with explicitly rounded intrinsics, so that an
// element and its optimizer state move to the bits the CPU gives them.

#include "common.cuh"
#include "noise.cuh"

// The rule kinds, as package update numbers them (update.Kind).
#define RULE_SGD 0
#define RULE_ADAM 1
#define RULE_RADAZO 2

// How the elements are stored.
#define STORE_F32 0        // float32
#define STORE_BF16 1       // bfloat16 bits
#define STORE_BF16_IN_F32 2 // bfloat16 values held as float32 (a bf16 checkpoint's vectors)

// UpdateRule is update.Rule.
struct UpdateRule {
    int kind;
    double lr, wd, mom, b1, b2, eps, c1, c2;
};

// update_target is update.Rule.Target: the new value of x (before rounding)
// given its estimate g, with the element's state m and v moved (hm: whether
// the rule keeps m; v is kept by Adam and R-AdaZO). The state is passed by
// reference, never as a pointer that may be null, so that a quad's state
// stays in registers (update_quad).
__device__ __forceinline__ double update_target(const UpdateRule& r, double x, double g, bool hm, float& m, float& v) {
    if (r.kind == RULE_SGD) {
        double step = __dadd_rn(g, __dmul_rn(r.wd, x));
        if (hm) {
            double b = __dadd_rn(__dmul_rn(r.mom, (double)m), step);
            m = __double2float_rn(b);
            step = b;
        }
        return __dsub_rn(x, __dmul_rn(r.lr, step));
    }
    if (r.kind == RULE_ADAM) {
        double mh = g;
        if (hm) {
            double mm = __dadd_rn(__dmul_rn(r.b1, (double)m), __dmul_rn(__dsub_rn(1.0, r.b1), g));
            m = __double2float_rn(mm);
            mh = __ddiv_rn(mm, r.c1);
        }
        double vv = __dadd_rn(__dmul_rn(r.b2, (double)v), __dmul_rn(__dmul_rn(__dsub_rn(1.0, r.b2), g), g));
        v = __double2float_rn(vv);
        return __dsub_rn(x, __ddiv_rn(__dmul_rn(r.lr, mh), __dadd_rn(__dsqrt_rn(__ddiv_rn(vv, r.c2)), r.eps)));
    }
    double mm = __dadd_rn(__dmul_rn(r.b1, (double)m), __dmul_rn(__dsub_rn(1.0, r.b1), g));
    double vv = __dadd_rn(__dmul_rn(r.b2, (double)v), __dmul_rn(__dmul_rn(__dsub_rn(1.0, r.b2), mm), mm));
    m = __double2float_rn(mm);
    v = __double2float_rn(vv);
    return __dsub_rn(x, __ddiv_rn(__dmul_rn(r.lr, __ddiv_rn(mm, r.c1)), __dadd_rn(__dsqrt_rn(__ddiv_rn(vv, r.c2)), r.eps)));
}

// stochastic_bf16 is update.StochasticBF16: x rounded to bfloat16 with the
// random word r (its 16 low bits added below the mantissa, then dropped);
// NaN stays a quiet NaN.
__device__ __forceinline__ unsigned short stochastic_bf16(float x, unsigned int r) {
    unsigned int b = __float_as_uint(x);
    if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0) return (unsigned short)((b >> 16) | 0x0040u);
    return (unsigned short)((b + (r & 0xFFFFu)) >> 16);
}

// update_word moves one element and its state by the rule given its
// estimate g and rounding word rnd, and returns (θ_new − θ_old)² in
// float64. The element is its stored word w: a float32's bits (STORE_F32,
// and STORE_BF16_IN_F32, whose low 16 bits are zero) or bfloat16 bits
// (STORE_BF16); m and v its state (update_target).
__device__ __forceinline__ double update_word(const UpdateRule& r, int storage, unsigned int& w, bool hm, float& m,
                                              float& v, double g, unsigned int rnd) {
    if (storage == STORE_F32) {
        double x = (double)__uint_as_float(w);
        float nx = __double2float_rn(update_target(r, x, g, hm, m, v));
        double dx = __dsub_rn((double)nx, x);
        w = __float_as_uint(nx);
        return __dmul_rn(dx, dx);
    }
    unsigned int old = storage == STORE_BF16 ? w : w >> 16; // the element's bfloat16 bits
    double x = (double)__uint_as_float(old << 16);
    unsigned int nx = stochastic_bf16(__double2float_rn(update_target(r, x, g, hm, m, v)), rnd);
    double dx = __dsub_rn((double)__uint_as_float(nx << 16), x);
    w = storage == STORE_BF16 ? nx : nx << 16;
    return __dmul_rn(dx, dx);
}

// update_element moves element i of theta (stored as storage says) and its
// state (ms, vs: null where the rule keeps none) by update_word.
__device__ __forceinline__ double update_element(const UpdateRule& r, void* theta, int storage, float* ms, float* vs,
                                                 long long i, double g, unsigned int rnd) {
    unsigned int w = storage == STORE_BF16 ? ((unsigned short*)theta)[i] : ((unsigned int*)theta)[i];
    float m = ms ? ms[i] : 0, v = vs ? vs[i] : 0;
    double d2 = update_word(r, storage, w, ms != 0, m, v, g, rnd);
    if (storage == STORE_BF16) ((unsigned short*)theta)[i] = (unsigned short)w;
    else ((unsigned int*)theta)[i] = w;
    if (ms) ms[i] = m;
    if (vs) vs[i] = v;
    return d2;
}

// update_quad is update_element on elements i … i+3 in order, its loads and
// stores one vector each (update_vec said they are aligned), and returns
// ss plus the four squares added in order.
__device__ __forceinline__ double update_quad(const UpdateRule& r, void* theta, int storage, float* ms, float* vs,
                                              long long i, const double g[4], const unsigned int rnd[4], double ss) {
    unsigned int w[4];
    if (storage == STORE_BF16) {
        uint2 h = *(const uint2*)((unsigned short*)theta + i); // little-endian: element i in the low half
        w[0] = h.x & 0xFFFFu, w[1] = h.x >> 16, w[2] = h.y & 0xFFFFu, w[3] = h.y >> 16;
    } else {
        uint4 h = *(const uint4*)((unsigned int*)theta + i);
        w[0] = h.x, w[1] = h.y, w[2] = h.z, w[3] = h.w;
    }
    float m[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
    if (ms) load4(ms + i, m);
    if (vs) load4(vs + i, v);
#pragma unroll
    for (int e = 0; e < 4; e++) ss = __dadd_rn(ss, update_word(r, storage, w[e], ms != 0, m[e], v[e], g[e], rnd[e]));
    if (storage == STORE_BF16) *(uint2*)((unsigned short*)theta + i) = make_uint2(w[0] | w[1] << 16, w[2] | w[3] << 16);
    else *(uint4*)((unsigned int*)theta + i) = make_uint4(w[0], w[1], w[2], w[3]);
    if (ms) store4(ms + i, m);
    if (vs) store4(vs + i, v);
    return ss;
}

// update_vec reports whether zo_update may move whole quads as vectors: e0
// a multiple of 4 and theta, ms and vs aligned to a quad (8 bytes of
// bfloat16 bits, 16 otherwise).
__device__ __forceinline__ bool update_vec(long long e0, const void* theta, int storage, const float* ms, const float* vs) {
    return (e0 & 3) == 0 && aligned(theta, storage == STORE_BF16 ? 8 : 16) && (!ms || aligned(ms, 16)) &&
           (!vs || aligned(vs, 16));
}

extern "C" {

// zo_update: elements [0, n) of theta, which are elements e0 … e0+n−1 of
// the directions' streams, moved by the rule (kind, lr, …; ms and vs its
// state, null where it keeps none), with ĝ = Σ_j w_j·z_j in float64, j in
// order. dirs holds 4 words per direction: the stream's seed, its step
// (low half) and direction (high half), the float64 bits of its norm
// (sphere noise; 1 otherwise) and of its weight w_j. A bfloat16 element is
// rounded with the word of element e0+i of the rounding stream (rseed,
// rstep, rdir). A thread per Philox block; partial[blockIdx.x] is the
// block's Σ (θ_new − θ_old)²: each thread's sum in element order, then a
// fixed tree. Blocks of 256 threads.
__global__ void zo_update(void* theta, float* ms, float* vs, double* partial, const unsigned long long* dirs, int ndirs,
                          int dist, int storage, long long n, long long e0, int kind, double lr, double wd, double mom,
                          double b1, double b2, double eps, double c1, double c2, unsigned long long rseed,
                          unsigned int rstep, unsigned int rdir) {
    __shared__ double red[256];
    UpdateRule r = {kind, lr, wd, mom, b1, b2, eps, c1, c2};
    NoiseStream rounding = {rseed, rstep, rdir};
    double ss = 0;
    bool vec = update_vec(e0, theta, storage, ms, vs);
    FOR_EACH(q, noise_quads(e0, n)) {
        unsigned long long b = (unsigned long long)(e0 >> 2) + q;
        double g[4] = {0, 0, 0, 0};
        for (int j = 0; j < ndirs; j++) {
            const unsigned long long* d = dirs + 4 * j;
            NoiseStream s = {d[0], (unsigned int)d[1], (unsigned int)(d[1] >> 32)};
            double w = __longlong_as_double((long long)d[3]);
            float z[4];
            noise_values(s, b, dist, __longlong_as_double((long long)d[2]), z);
            for (int m = 0; m < 4; m++) g[m] = __dadd_rn(g[m], __dmul_rn(w, (double)z[m]));
        }
        unsigned int rnd[4] = {0, 0, 0, 0};
        if (storage != STORE_F32) philox_block(rounding, b, rnd);
        long long i0 = (long long)(4 * b) - e0;
        if (vec && i0 + 3 < n) { // a whole quad (i0 ≥ 0: e0 is a multiple of 4)
            ss = update_quad(r, theta, storage, ms, vs, i0, g, rnd, ss);
            continue;
        }
        for (int m = 0; m < 4; m++) {
            long long i = i0 + m;
            if (i >= 0 && i < n) ss = __dadd_rn(ss, update_element(r, theta, storage, ms, vs, i, g[m], rnd[m]));
        }
    }
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (threadIdx.x < w) red[threadIdx.x] = __dadd_rn(red[threadIdx.x], red[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}

} // extern "C"
