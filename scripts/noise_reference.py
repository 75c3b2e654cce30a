#!/usr/bin/env python3
"""An independent implementation of meazo-go's noise contract (docs/ALGORITHMS.md, "The noise contract"),
written from the document in NumPy: Philox4x32-10, the group stream key, and the float32 Box-Muller transform,
every float32 operation rounded as NumPy rounds np.float32 arithmetic (IEEE single, no fused multiply-add).

noise/noise_test.go's reference values come from it:

    python3 scripts/noise_reference.py            # the first normals of a few streams
    python3 scripts/noise_reference.py --check N  # N random (key, step, dir, block) samples as Go test data

It needs only NumPy (Debian's python3-numpy).
"""
import argparse
import sys

import numpy as np

F = np.float32
M32 = 0xFFFFFFFF


def philox4x32(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        hi0, lo0 = p0 >> 32, p0 & M32
        hi1, lo1 = p1 >> 32, p1 & M32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def stream_seed(run_seed, group):
    return run_seed ^ ((0x9E3779B97F4A7C15 * (group + 1)) & 0xFFFFFFFFFFFFFFFF)


def f32bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f32frombits(b):
    return np.array([b], dtype=np.uint32).view(np.float32)[0]


SQRTHF = F(0.70710678118654752440)
PIO2 = F(np.pi / 2)


def log32(x):
    bits = f32bits(x)
    e = F((bits >> 23) - 126)
    m = f32frombits((bits & 0x007FFFFF) | 0x3F000000)
    if m < SQRTHF:
        e = F(e - F(1))
        f = F(F(m + m) - F(1))
    else:
        f = F(m - F(1))
    z = F(f * f)
    p = F(7.0376836292e-2)
    for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
              -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1):
        p = F(F(p * f) + F(c))
    y = F(F(p * f) * z)
    y = F(y + F(F(-2.12194440e-4) * e))
    y = F(y + F(F(-0.5) * z))
    r = F(f + y)
    return F(r + F(F(0.693359375) * e))


def sin_poly(a):
    z = F(a * a)
    p = F(-1.9515295891e-4)
    p = F(F(p * z) + F(8.3321608736e-3))
    p = F(F(p * z) + F(-1.6666654611e-1))
    return F(F(F(p * z) * a) + a)


def cos_poly(a):
    z = F(a * a)
    p = F(2.443315711809948e-5)
    p = F(F(p * z) + F(-1.388731625493765e-3))
    p = F(F(p * z) + F(4.166664568298827e-2))
    return F(F(F(F(p * z) * z) - F(F(0.5) * z)) + F(1))


def sincos32(b):
    q = b >> 30
    f = (b >> 6) & 0xFFFFFF
    if f < (1 << 23):
        a = F(F(F(f) * F(2.0 ** -24)) * PIO2)
        s, c = sin_poly(a), cos_poly(a)
    else:
        a = F(F(F((1 << 24) - f) * F(2.0 ** -24)) * PIO2)
        s, c = cos_poly(a), sin_poly(a)
    return [(s, c), (c, -s), (-s, -c), (-c, s)][q]


def box_muller(a, b):
    u = F(F((a >> 8) + 1) * F(2.0 ** -24))
    r = np.sqrt(F(F(-2) * log32(u)), dtype=np.float32)
    s, c = sincos32(b)
    return F(r * c), F(r * s)


def block_normals(key, step, direction, block):
    x = philox4x32((block & M32, block >> 32, step, direction), (key & M32, key >> 32))
    c0, s0 = box_muller(x[0], x[1])
    c1, s1 = box_muller(x[2], x[3])
    return [c0, s0, c1, s1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", type=int, default=0)
    args = ap.parse_args()
    np.seterr(all="raise")
    if args.check:
        rng = np.random.default_rng(20261128)
        for _ in range(args.check):
            key = int(rng.integers(0, 2**64, dtype=np.uint64))
            step, direction = int(rng.integers(0, 2**32)), int(rng.integers(0, 2**32))
            block = int(rng.integers(0, 2**40))
            vals = block_normals(key, step, direction, block)
            bits = ", ".join("0x%08x" % f32bits(v) for v in vals)
            print("{0x%016x, %d, %d, %d, [4]uint32{%s}}," % (key, step, direction, block, bits))
        return
    for name, key in (("group 0 stream of run seed 42", stream_seed(42, 0)), ("key-only 42", 42)):
        vals = []
        for b in range(2):
            vals += block_normals(key, 3, 0, b)
        print(name + ": " + ", ".join("%.8g" % v for v in vals[:6]))
        print("  bits: " + ", ".join("0x%08x" % f32bits(v) for v in vals[:6]))


if __name__ == "__main__":
    sys.exit(main())
