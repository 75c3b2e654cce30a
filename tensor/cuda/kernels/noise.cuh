// The noise contract on the device (docs/ALGORITHMS.md, "The noise
// contract"; package noise is the definition): Philox4x32-10 over the
// counter (block mod 2³², block >> 32, step, direction) under the key
// (seed low, seed high), the float32 Box–Muller transform of
// noise/normal.go operation by operation, rademacher and ternary, sphere's
// division in float64, and noise.Perturbed. Every floating-point operation
// is an explicitly rounded intrinsic, which NVRTC may not contract into a
// fused multiply-add whatever its --fmad setting (TestTrainerKernelsRound
// checks the PTX), so a value has the bits noise.FillRange gives on the
// host.

#ifndef MEAZO_KERNELS_NOISE_CUH
#define MEAZO_KERNELS_NOISE_CUH

// The distributions, as package noise numbers them (noise.Dist).
#define DIST_NORMAL 0
#define DIST_SPHERE 1
#define DIST_RADEMACHER 2
#define DIST_TERNARY 3

// NoiseStream is a noise.Stream: the key and the counter's words 2 and 3.
struct NoiseStream {
    unsigned long long seed;
    unsigned int step, dir;
};

// philox_block returns in x the four words of block b of stream s
// (noise.Stream.block): Philox4x32-10, each round
// c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0) with (hi0, lo0) =
// 0xD2511F53·c0 and (hi1, lo1) = 0xCD9E8D57·c2, then the key bumped.
__device__ __forceinline__ void philox_block(const NoiseStream& s, unsigned long long b, unsigned int x[4]) {
    unsigned int c0 = (unsigned int)b, c1 = (unsigned int)(b >> 32), c2 = s.step, c3 = s.dir;
    unsigned int k0 = (unsigned int)s.seed, k1 = (unsigned int)(s.seed >> 32);
    for (int r = 0; r < 10; r++) {
        unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    x[0] = c0, x[1] = c1, x[2] = c2, x[3] = c3;
}

// noise_log32 is Cephes' logf for x in [2⁻²⁴, 1] (noise.log32).
__device__ __forceinline__ float noise_log32(float x) {
    unsigned int bits = __float_as_uint(x);
    float e = __int2float_rn((int)(bits >> 23) - 126);
    float m = __uint_as_float((bits & 0x007FFFFFu) | 0x3F000000u); // in [½, 1)
    float f;
    if (m < __uint_as_float(0x3F3504F3u)) { // √½ rounded to float32, Cephes' SQRTHF
        e = __fsub_rn(e, 1.0f);
        f = __fsub_rn(__fadd_rn(m, m), 1.0f);
    } else {
        f = __fsub_rn(m, 1.0f);
    }
    float z = __fmul_rn(f, f);
    float p = 7.0376836292e-2f;
    p = __fsub_rn(__fmul_rn(p, f), 1.1514610310e-1f);
    p = __fadd_rn(__fmul_rn(p, f), 1.1676998740e-1f);
    p = __fsub_rn(__fmul_rn(p, f), 1.2420140846e-1f);
    p = __fadd_rn(__fmul_rn(p, f), 1.4249322787e-1f);
    p = __fsub_rn(__fmul_rn(p, f), 1.6668057665e-1f);
    p = __fadd_rn(__fmul_rn(p, f), 2.0000714765e-1f);
    p = __fsub_rn(__fmul_rn(p, f), 2.4999993993e-1f);
    p = __fadd_rn(__fmul_rn(p, f), 3.3333331174e-1f);
    float y = __fmul_rn(__fmul_rn(p, f), z);
    y = __fadd_rn(y, __fmul_rn(-2.12194440e-4f, e));
    y = __fadd_rn(y, __fmul_rn(-0.5f, z));
    float r = __fadd_rn(f, y);
    return __fadd_rn(r, __fmul_rn(0.693359375f, e));
}

// noise_sin_poly and noise_cos_poly are Cephes' sinf and cosf polynomials
// for a in [0, π/4] (noise.sinPoly, noise.cosPoly).
__device__ __forceinline__ float noise_sin_poly(float a) {
    float z = __fmul_rn(a, a);
    float p = -1.9515295891e-4f;
    p = __fadd_rn(__fmul_rn(p, z), 8.3321608736e-3f);
    p = __fsub_rn(__fmul_rn(p, z), 1.6666654611e-1f);
    return __fadd_rn(__fmul_rn(__fmul_rn(p, z), a), a);
}

__device__ __forceinline__ float noise_cos_poly(float a) {
    float z = __fmul_rn(a, a);
    float p = 2.443315711809948e-5f;
    p = __fsub_rn(__fmul_rn(p, z), 1.388731625493765e-3f);
    p = __fadd_rn(__fmul_rn(p, z), 4.166664568298827e-2f);
    return __fadd_rn(__fsub_rn(__fmul_rn(__fmul_rn(p, z), z), __fmul_rn(0.5f, z)), 1.0f);
}

// noise_box_muller writes r·cos θ and r·sin θ of the words (a, b)
// (noise.boxMuller): u = (a>>8 + 1)·2⁻²⁴, r = √(−2 ln u); the angle's
// quadrant is b>>30, its fraction t = ((b>>6) mod 2²⁴)·2⁻²⁴ within it, t ≥ ½
// computed as the mirror angle (1−t)·π/2 with sin and cos swapped. Written
// without branches (the mirror and the quadrant are selects and sign
// flips), so that a warp, whose lanes' angles fall on either side at
// random, evaluates each polynomial once instead of both sides' in turn.
__device__ __forceinline__ void noise_box_muller(unsigned int a, unsigned int b, float* c0, float* s0) {
    const float pi_over_2 = __uint_as_float(0x3FC90FDBu); // π/2 rounded to float32
    float u = __fmul_rn(__uint2float_rn((a >> 8) + 1u), 5.9604644775390625e-8f); // ·2⁻²⁴, exact
    float r = __fsqrt_rn(__fmul_rn(-2.0f, noise_log32(u)));
    unsigned int q = b >> 30, f = (b >> 6) & 0xFFFFFFu;
    bool low = f < (1u << 23); // t < ½: the angle itself, else its mirror
    float a1 = __fmul_rn(__fmul_rn(__uint2float_rn(low ? f : (1u << 24) - f), 5.9604644775390625e-8f), pi_over_2);
    float sp = noise_sin_poly(a1), cp = noise_cos_poly(a1);
    float s = low ? sp : cp, c = low ? cp : sp;
    // Quadrant q turns (sin, cos) = (s, c) into (s, c), (c, −s), (−s, −c)
    // or (−c, s): odd quadrants swap, q ≥ 2 negates the sine, q = 1, 2 the
    // cosine.
    float sn = (q & 1u) ? c : s, cs = (q & 1u) ? s : c;
    if (q & 2u) sn = -sn;
    if ((q ^ (q >> 1)) & 1u) cs = -cs;
    *c0 = __fmul_rn(r, cs);
    *s0 = __fmul_rn(r, sn);
}

// noise_values writes in v the values of the four elements of block b of
// stream s under dist (noise.Stream.blockValues), each normal divided by
// norm for sphere noise (in float64, rounded: noise.FillRange).
__device__ __forceinline__ void noise_values(const NoiseStream& s, unsigned long long b, int dist, double norm, float v[4]) {
    unsigned int x[4];
    philox_block(s, b, x);
    switch (dist) {
    case DIST_NORMAL:
    case DIST_SPHERE:
        noise_box_muller(x[0], x[1], &v[0], &v[1]);
        noise_box_muller(x[2], x[3], &v[2], &v[3]);
        if (dist == DIST_SPHERE)
            for (int m = 0; m < 4; m++) v[m] = __double2float_rn(__ddiv_rn((double)v[m], norm));
        break;
    case DIST_RADEMACHER:
        for (int m = 0; m < 4; m++) v[m] = (x[m] & 1u) ? 1.0f : -1.0f;
        break;
    default: // ternary
        for (int m = 0; m < 4; m++) v[m] = __int2float_rn((int)(x[m] % 3u) - 1);
        break;
    }
}

// noise_perturbed is θ + scale·z rounded to float32, the sum in float64
// (noise.Perturbed).
__device__ __forceinline__ float noise_perturbed(float theta, double scale, float z) {
    return __double2float_rn(__dadd_rn((double)theta, __dmul_rn(scale, (double)z)));
}

// Quads: the kernels that draw noise give a thread a Philox block of the
// stream (four elements), so that each block is computed once. The
// elements [e0, e0+n) of a stream touch blocks e0/4 … (e0+n−1)/4.
__device__ __forceinline__ long long noise_quads(long long e0, long long n) {
    return n <= 0 ? 0 : ((e0 + n - 1) >> 2) - (e0 >> 2) + 1;
}

#endif // MEAZO_KERNELS_NOISE_CUH
