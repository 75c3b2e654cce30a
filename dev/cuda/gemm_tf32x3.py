#!/usr/bin/env python3
"""gemm_tf32x3 (dev/cuda/gemm_tf32x3.cu, split float32 products on the tensor cores, 3xTF32) against
cuBLAS SGEMM (torch.mm, TF32 off) and plain TF32 (torch.mm with TF32 on), same GPU, same run.

The kernel is loaded from its PTX (compile it first with the pinned NVRTC:
go run ./tensor/cuda/internal/ptxgen -in dev/cuda/gemm_tf32x3.cu -out gemm_tf32x3.ptx) through the
CUDA driver API (ctypes), on PyTorch's context and stream. For each shape of the
models' projections (y [M][N] = x [M][K] · W[N][K]ᵀ) at the forward's and the ZO step's row
counts it prints the median time of 20 calls after 3 warm-ups, TFLOP/s, and each method's error
against float64 on the first 256 rows: max |y − y64| / Σ|x·w| (the per-output bound the Go test
used) and the rms of (y − y64) / rms(y64).

  python3 dev/cuda/gemm_tf32x3.py --ptx gemm_tf32x3.ptx
"""
import argparse
import ctypes
import statistics

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptx", required=True, help="the PTX of dev/cuda/gemm_tf32x3.cu")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    cu = ctypes.CDLL("libcuda.so.1")
    mod = ctypes.c_void_p()
    ptx = open(a.ptx, "rb").read() + b"\0"
    check(cu, cu.cuModuleLoadData(ctypes.byref(mod), ptx), "cuModuleLoadData")
    fns = {}
    for name, tile in (("gemm_tf32x3", 128), ("gemm_tf32x3_64", 64)):
        fn = ctypes.c_void_p()
        check(cu, cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        regs, local = ctypes.c_int(), ctypes.c_int()
        cu.cuFuncGetAttribute(ctypes.byref(regs), 4, fn)  # CU_FUNC_ATTRIBUTE_NUM_REGS
        cu.cuFuncGetAttribute(ctypes.byref(local), 3, fn)  # CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
        fns[tile] = fn
        print(f"# {name}: {regs.value} registers, {local.value} bytes of local memory per thread")
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, {torch.cuda.get_device_properties(0).multi_processor_count} SMs; "
          f"kernels from {a.ptx}; median of 20 after 3 warm-ups; errors on the first 256 rows against float64")

    def tf32x3(tile):
        def run(y, x, w):
            m, k = x.shape
            n = w.shape[0]
            vals = [ctypes.c_uint64(y.data_ptr()), ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(w.data_ptr()),
                    ctypes.c_int32(m), ctypes.c_int32(n), ctypes.c_int32(k)]
            args = (ctypes.c_void_p * 6)(*[ctypes.addressof(v) for v in vals])
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            check(cu, cu.cuLaunchKernel(fns[tile], (m + tile - 1) // tile, (n + 127) // 128, 1, 256, 1, 1, 0, stream, args, None),
                  "cuLaunchKernel")
        return run

    def sgemm(y, x, w):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.mm(x, w.t(), out=y)

    def tf32(y, x, w):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.mm(x, w.t(), out=y)
        torch.backends.cuda.matmul.allow_tf32 = False

    shapes = {  # name: (K, N)
        "Llama q/o": (2048, 2048), "Llama k/v": (2048, 512), "Llama gate/up": (2048, 8192), "Llama down": (8192, 2048),
        "Llama lm_head": (2048, 128256), "Qwen3 q": (1024, 2048), "Qwen3 k/v": (1024, 1024), "Qwen3 o": (2048, 1024),
        "Qwen3 gate/up": (1024, 3072), "Qwen3 down": (3072, 1024),
    }
    print(f"{'shape':16} {'M':>5} {'K':>6} {'N':>7} {'sgemm ms':>9} {'TFLOP/s':>8} {'x3/128 ms':>10} {'x3/64 ms':>9} {'TFLOP/s':>8} "
          f"{'speedup':>7} {'tf32 ms':>8}  {'err sgemm':>10} {'err 3xTF32':>10} {'err tf32':>10}  {'rms sgemm':>10} {'rms 3xTF32':>10} "
          f"{'rms tf32':>10} tiles-same")
    for rows in (640, 1024, 1280, 2400, 4800):
        for name, (k, n) in shapes.items():
            if name.endswith("lm_head") and rows != 1024:
                continue
            x = torch.randn(rows, k, device="cuda")
            w = torch.randn(n, k, device="cuda") * k ** -0.5
            ref = x[:256].double() @ w.double().t()
            mag = x[:256].double().abs() @ w.double().abs().t()
            times, errs, rmss, outs = {}, {}, {}, {}
            for label, f in (("sgemm", sgemm), ("x3/128", tf32x3(128)), ("x3/64", tf32x3(64)), ("tf32", tf32)):
                y = torch.empty(rows, n, device="cuda")
                times[label] = timed(lambda: f(y, x, w))
                d = y[:256].double() - ref
                errs[label] = (d.abs() / mag).max().item()
                rmss[label] = (d.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt()).item()
                outs[label] = y
            same = torch.equal(outs["x3/128"], outs["x3/64"])
            best = min(times["x3/128"], times["x3/64"])
            fl = 2.0 * rows * k * n
            print(f"{name:16} {rows:5} {k:6} {n:7} {times['sgemm'] * 1e3:9.3f} {fl / times['sgemm'] / 1e12:8.1f} "
                  f"{times['x3/128'] * 1e3:10.3f} {times['x3/64'] * 1e3:9.3f} {fl / best / 1e12:8.1f} {times['sgemm'] / best:7.2f} "
                  f"{times['tf32'] * 1e3:8.3f}  {errs['sgemm']:10.2e} {errs['x3/128']:10.2e} {errs['tf32']:10.2e}  "
                  f"{rmss['sgemm']:10.2e} {rmss['x3/128']:10.2e} {rmss['tf32']:10.2e} {same}", flush=True)
            del x, w, ref, mag, outs


def timed(f, reps=20, warm=3):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)


def check(cu, rc, what):
    if rc != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(rc, ctypes.byref(s))
        raise SystemExit(f"{what}: CUDA error {rc} ({s.value.decode() if s.value else '?'})")


if __name__ == "__main__":
    main()
