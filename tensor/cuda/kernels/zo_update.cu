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
// given its estimate g, with the element's state m and v (null where the
// rule keeps none) moved.
__device__ __forceinline__ double update_target(const UpdateRule& r, double x, double g, float* m, float* v) {
    if (r.kind == RULE_SGD) {
        double step = __dadd_rn(g, __dmul_rn(r.wd, x));
        if (m) {
            double b = __dadd_rn(__dmul_rn(r.mom, (double)*m), step);
            *m = __double2float_rn(b);
            step = b;
        }
        return __dsub_rn(x, __dmul_rn(r.lr, step));
    }
    if (r.kind == RULE_ADAM) {
        double mh = g;
        if (m) {
            double mm = __dadd_rn(__dmul_rn(r.b1, (double)*m), __dmul_rn(__dsub_rn(1.0, r.b1), g));
            *m = __double2float_rn(mm);
            mh = __ddiv_rn(mm, r.c1);
        }
        double vv = __dadd_rn(__dmul_rn(r.b2, (double)*v), __dmul_rn(__dmul_rn(__dsub_rn(1.0, r.b2), g), g));
        *v = __double2float_rn(vv);
        return __dsub_rn(x, __ddiv_rn(__dmul_rn(r.lr, mh), __dadd_rn(__dsqrt_rn(__ddiv_rn(vv, r.c2)), r.eps)));
    }
    double mm = __dadd_rn(__dmul_rn(r.b1, (double)*m), __dmul_rn(__dsub_rn(1.0, r.b1), g));
    double vv = __dadd_rn(__dmul_rn(r.b2, (double)*v), __dmul_rn(__dmul_rn(__dsub_rn(1.0, r.b2), mm), mm));
    *m = __double2float_rn(mm);
    *v = __double2float_rn(vv);
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

// update_element moves element i of theta (stored as storage says) and its
// state by the rule given its estimate g and rounding word rnd, and
// returns (θ_new − θ_old)² in float64.
__device__ __forceinline__ double update_element(const UpdateRule& r, void* theta, int storage, float* ms, float* vs,
                                                 long long i, double g, unsigned int rnd) {
    float* m = ms ? &ms[i] : 0;
    float* v = vs ? &vs[i] : 0;
    if (storage == STORE_F32) {
        float* t = (float*)theta;
        double x = (double)t[i];
        float nx = __double2float_rn(update_target(r, x, g, m, v));
        double dx = __dsub_rn((double)nx, x);
        t[i] = nx;
        return __dmul_rn(dx, dx);
    }
    unsigned int old; // the element's bfloat16 bits
    if (storage == STORE_BF16) old = ((unsigned short*)theta)[i];
    else old = __float_as_uint(((float*)theta)[i]) >> 16;
    double x = (double)__uint_as_float(old << 16);
    unsigned int nx = stochastic_bf16(__double2float_rn(update_target(r, x, g, m, v)), rnd);
    double dx = __dsub_rn((double)__uint_as_float(nx << 16), x);
    if (storage == STORE_BF16) ((unsigned short*)theta)[i] = (unsigned short)nx;
    else ((float*)theta)[i] = __uint_as_float(nx << 16);
    return __dmul_rn(dx, dx);
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
        for (int m = 0; m < 4; m++) {
            long long i = (long long)(4 * b) + m - e0;
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
