"""Writes float16_numpy.txt, the reference of safetensors.TestFloat16BitsNumpy:
float32 values and numpy's float32 -> float16 conversion of each (IEEE half,
rounded to nearest with ties to even, as torch's .to(torch.float16) rounds).

    /usr/bin/python3 safetensors/testdata/make_float16_numpy.py > safetensors/testdata/float16_numpy.txt
"""
import numpy as np

print("# float32 bits, then numpy %s's float32.astype(float16) bits (IEEE half, nearest, ties to even)." % np.__version__)
print("# Written by make_float16_numpy.py.")
rng = np.random.default_rng(7)
vals = list(rng.integers(0, 2**32, size=60, dtype=np.uint64).astype(np.uint32).view(np.float32))
e = rng.integers(98, 145, size=300, dtype=np.uint32)  # from below half's subnormals to beyond 65504
m = rng.integers(0, 2**23, size=300, dtype=np.uint32)
m[:100] = (m[:100] & ~np.uint32(0x1FFF)) | np.uint32(0x1000)  # a third exactly halfway between two halves
s = rng.integers(0, 2, size=300, dtype=np.uint32)
vals += list(((s << 31) | (e << 23) | m).view(np.float32))
vals += [np.float32(x) for x in [65504, 65519.996, 65520, 65536, 2**-25, 2**-24, 1.5 * 2**-24, 2.5 * 2**-24,
                                 2**-14 - 2**-25, -0.0, np.inf, -np.inf, 1e-40]]
with np.errstate(over="ignore"):
    for f in vals:
        f = np.float32(f)
        print("%08x %04x" % (f.view(np.uint32), f.astype(np.float16).view(np.uint16)))
