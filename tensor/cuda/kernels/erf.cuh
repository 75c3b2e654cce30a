// erf in float64 for the exact GELU (gelu.cu): the CPU backend's erf
// (tensor/cpu/gelu.go: FreeBSD's s_erf.c, its tail's two exponentials by
// exp64 of tensor/cpu/ops.go, the algorithm of Go's math.Exp), transcribed
// operation by operation with the explicitly rounded double intrinsics, so
// that neither NVRTC nor g++ (the emulator) may contract a product into a
// fused multiply-add or reorder anything: every operation rounds where the
// Go code rounds, and the GPU, the emulator and the CPU give the same bits.
// Not CUDA's erf, which differs from this one by an ulp of float64 at some
// inputs: around x = -6, where 1 + erf(x/√2) cancels, that ulp changed the
// float32 GELU on an H200 (docs/bench/2026-11-30-h200/run2-febb616). The
// kernels call no libm transcendental in float64 that the CPU's bits depend
// on (TestKernelsCallNoLibmMath).
//
// ====================================================
// Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//
// Developed at SunPro, a Sun Microsystems, Inc. business.
// Permission to use, copy, modify, and distribute this
// software is freely granted, provided that this notice
// is preserved.
// ====================================================

#ifndef MEAZO_KERNELS_ERF_CUH
#define MEAZO_KERNELS_ERF_CUH

// exp64 is e^x for x ≤ 0: tensor/cpu/ops.go's exp64 (the algorithm of Go's
// math.Exp, clamped at -708), operation for operation.
__device__ __forceinline__ double exp64(double x) {
    const double ln2Hi = 6.93147180369123816490e-01, ln2Lo = 1.90821492927058770002e-10,
                 log2e = 1.44269504088896338700e+00, p1 = 1.66666666666666657415e-01,
                 p2 = -2.77777777770155933842e-03, p3 = 6.61375632143793436117e-05,
                 p4 = -1.65339022054652515390e-06, p5 = 4.13813679705723846039e-08;
    x = x < -708.0 ? -708.0 : x; // Go's max(x, -708): NaN stays NaN
    double k = __dsub_rn(0.0, floor(__dsub_rn(0.5, __dmul_rn(x, log2e))));
    double hi = __dsub_rn(x, __dmul_rn(k, ln2Hi));
    double lo = __dmul_rn(k, ln2Lo);
    double r = __dsub_rn(hi, lo);
    double t = __dmul_rn(r, r);
    double c = __dmul_rn(t, p5);
    c = __dmul_rn(t, __dadd_rn(p4, c));
    c = __dmul_rn(t, __dadd_rn(p3, c));
    c = __dmul_rn(t, __dadd_rn(p2, c));
    c = __dmul_rn(t, __dadd_rn(p1, c));
    c = __dsub_rn(r, c);
    double y = __dsub_rn(1.0, __dsub_rn(__dsub_rn(lo, __ddiv_rn(__dmul_rn(r, c), __dsub_rn(2.0, c))), hi));
    return __dmul_rn(y, __longlong_as_double((long long)((unsigned long long)((long long)k + 1023) << 52)));
}

// erf64_poly is c0 + s·(c1 + s·(… + s·cN)) for the N+1 coefficients c,
// each product rounded before it is added (gelu.go's nested float64(…)).
__device__ __forceinline__ double erf64_poly(double s, const double* c, int n) {
    double v = __dmul_rn(s, c[n]);
    for (int i = n - 1; i > 0; i--) v = __dmul_rn(s, __dadd_rn(c[i], v));
    return __dadd_rn(c[0], v);
}

// erf64 is gelu.go's erf: s_erf.c by range of |x| (below 2^-28, 0.84375,
// 1.25, 1/0.35, 6; above, ±1), odd, erf(NaN) = NaN.
__device__ __forceinline__ double erf64(double x) {
    const double erx = 8.45062911510467529297e-01, efx = 1.28379167095512586316e-01;
    const double pp[] = {1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
                         -5.77027029648944159157e-03, -2.37630166566501626084e-05};
    const double qq[] = {1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                         1.32494738004321644526e-04, -3.96022827877536812320e-06};
    const double pa[] = {-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
                         3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
                         -2.16637559486879084300e-03};
    const double qa[] = {1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
                         1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02};
    const double ra[] = {-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
                         -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
                         -8.12874355063065934246e+01, -9.81432934416914548592e+00};
    const double sa[] = {1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
                         6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
                         6.57024977031928170135e+00, -6.04244152148580987438e-02};
    const double rb[] = {-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
                         -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
                         -4.83519191608651397019e+02};
    const double sb[] = {1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
                         3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
                         -2.24409524465858183362e+01};
    const double tiny = 3.7252902984619140625e-09; // 2^-28: below, erf(x) = x + efx·x
    const double inv035 = 2.857142857142857;       // Go's constant 1/0.35 (20/7 rounded once; C's 1/0.35 rounds 0.35 first)
    if (x != x) return x;
    double a = fabs(x), e;
    if (a < tiny) {
        e = __dadd_rn(a, __dmul_rn(efx, a));
    } else if (a < 0.84375) { // a + a·P(a²)/Q(a²)
        double z = __dmul_rn(a, a);
        e = __dadd_rn(a, __dmul_rn(a, __ddiv_rn(erf64_poly(z, pp, 4), erf64_poly(z, qq, 5))));
    } else if (a < 1.25) { // erx + P(a−1)/Q(a−1)
        double s = __dsub_rn(a, 1.0);
        e = __dadd_rn(erx, __ddiv_rn(erf64_poly(s, pa, 6), erf64_poly(s, qa, 6)));
    } else if (a < 6.0) { // 1 − exp(−z² − 0.5625)·exp((z−a)(z+a) + R/S)/a, z: a with its low 32 bits cleared
        double s = __ddiv_rn(1.0, __dmul_rn(a, a)), r, q;
        if (a < inv035) {
            r = erf64_poly(s, ra, 7), q = erf64_poly(s, sa, 8);
        } else {
            r = erf64_poly(s, rb, 6), q = erf64_poly(s, sb, 7);
        }
        double z = __longlong_as_double(__double_as_longlong(a) & ~0xffffffffLL);
        double u = __dmul_rn(exp64(__dsub_rn(-0.5625, __dmul_rn(z, z))),
                             exp64(__dadd_rn(__dmul_rn(__dsub_rn(z, a), __dadd_rn(z, a)), __ddiv_rn(r, q))));
        e = __dsub_rn(1.0, __ddiv_rn(u, a));
    } else { // also ±Inf
        e = 1.0;
    }
    return copysign(e, x); // erf is odd: erf(−0) = −0
}

#endif // MEAZO_KERNELS_ERF_CUH
