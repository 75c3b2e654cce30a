#!/usr/bin/env python3
"""PyTorch on an NVIDIA GPU, as the peer of `meazo-bench forward/zostep --backend cuda`.

The same HF model (published config, random weights), float32, eager attention, TF32 off:
  forward: logits at every position for each BxT batch of random tokens (kept on the GPU);
  --loss-all: the forward with every position supervised, model(input_ids, labels=input_ids).loss,
  the peer of `meazo-bench forward --loss-all`;
  --mezo-step: MeZO's step with PEFT LoRA r=16 on q_proj/v_proj: perturb +eps (noise
  regenerated from a seed, in place), loss, perturb -2eps, loss, restore, update, as the
  MeZO reference code does; the last 3 tokens of each row are supervised, as in
  `meazo-bench zostep`.
  --sgemm: cuBLAS SGEMM's rate (torch.mm, float32, TF32 off) on the models' GEMM shapes at
  M = 8x128 rows and on 8192^3, the yardstick for the forward's TFLOP/s;
  --sgemm-step: the projections at the ZO step's row counts, apart and stacked (q|k|v, gate|up).
Prints one row per shape: shape, median seconds, tokens/s, peak device MiB.

  python3 scripts/gpu/bench_torch_cuda.py --config DIR_WITH_CONFIG_JSON --shapes 8x128 [--mezo-step]
  python3 scripts/gpu/bench_torch_cuda.py --sgemm [--sgemm-step]
"""
import argparse
import statistics
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", help="directory holding config.json")
    ap.add_argument("--sgemm", action="store_true", help="cuBLAS SGEMM's rate on the models' shapes")
    ap.add_argument("--sgemm-step", action="store_true", help="with --sgemm: the projections at the step's rows, apart and stacked")
    ap.add_argument("--shapes", default="8x128")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mezo-step", action="store_true")
    ap.add_argument("--loss-all", action="store_true", help="forward with labels=input_ids; the loss comes back")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--lr", type=float, default=1e-6)
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    if a.sgemm:
        sgemm(a.sgemm_step)
        return
    cfg = AutoConfig.from_pretrained(a.config)
    # Built on the GPU (random init there is seconds, on the host a minute), then float32.
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    model = model.float().eval()
    params = []
    if a.mezo_step:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]))
        params = [p for p in model.parameters() if p.requires_grad]
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, float32, TF32 off, eager attention, "
          f"{'MeZO step (LoRA r=16)' if a.mezo_step else 'forward, every position supervised, loss' if a.loss_all else 'forward, logits at every position'}")
    print(f"{'shape':8} {'seconds':>10} {'tokens/s':>12} {'peak MiB':>10}")

    def perturb(seed, scale):
        torch.manual_seed(seed)
        for p in params:
            z = torch.normal(mean=0, std=1, size=p.shape, device=p.device, dtype=p.dtype)
            p.data.add_(z, alpha=scale)

    for s in a.shapes.split(","):
        b, t = map(int, s.split("x"))
        ids = torch.randint(0, cfg.vocab_size, (b, t), device="cuda")
        labels = torch.full_like(ids, -100)
        labels[:, -3:] = ids[:, -3:]

        def run():
            with torch.inference_mode():
                if a.loss_all:
                    model(input_ids=ids, labels=ids).loss.item()
                    return
                if not a.mezo_step:
                    model(input_ids=ids).logits
                    return
                seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
                perturb(seed, a.eps)
                l1 = model(input_ids=ids, labels=labels).loss.item()
                perturb(seed, -2 * a.eps)
                l2 = model(input_ids=ids, labels=labels).loss.item()
                perturb(seed, a.eps)
                g = (l1 - l2) / (2 * a.eps)
                perturb(seed, -a.lr * g)

        run()  # warm-up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        sec = statistics.median(times)
        print(f"{s:8} {sec:10.4f} {b * t / sec:12.0f} {torch.cuda.max_memory_allocated() / 2**20:10.0f}")


def sgemm(step_rows=False):
    """TFLOP/s of torch.mm (cuBLAS SGEMM, TF32 off) for y = x W^T at M = 1024 rows; with step_rows, the
    projections of both models at the ZO step's row counts (8x80 and 8x300: 640 and 2400 rows), each
    apart and stacked into one product (q|k|v, gate|up), to tell whether fused projections would pay."""
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, cuBLAS SGEMM via torch.mm, float32, "
          f"TF32 off (allow_tf32={torch.backends.cuda.matmul.allow_tf32}), median of 20 after 3 warm-ups")
    print(f"{'shape':28} {'M':>6} {'K':>6} {'N':>7} {'ms':>9} {'TFLOP/s':>8}")
    if step_rows:
        shapes = []
        for m in (640, 2400):
            for model, h, q, kv, inter in (("Llama-3.2-1B", 2048, 2048, 512, 8192), ("Qwen3-0.6B", 1024, 2048, 1024, 3072)):
                shapes += [(f"{model} q", m, h, q), (f"{model} k/v", m, h, kv), (f"{model} q|k|v", m, h, q + 2 * kv),
                           (f"{model} gate/up", m, h, inter), (f"{model} gate|up", m, h, 2 * inter)]
        timed(shapes)
        return
    shapes = [("Llama-3.2-1B q/o", 1024, 2048, 2048), ("Llama-3.2-1B k/v", 1024, 2048, 512),
              ("Llama-3.2-1B gate/up", 1024, 2048, 8192), ("Llama-3.2-1B down", 1024, 8192, 2048),
              ("Llama-3.2-1B lm_head", 1024, 2048, 128256), ("Qwen3-0.6B q", 1024, 1024, 2048),
              ("Qwen3-0.6B gate/up", 1024, 1024, 3072), ("Qwen3-0.6B down", 1024, 3072, 1024),
              ("Qwen3-0.6B lm_head", 1024, 1024, 151936), ("square 8192", 8192, 8192, 8192),
              # The projections fused into one product (q|k|v and gate|up stacked): would fewer,
              # wider GEMMs run faster? Compare with the sum of their parts above.
              ("Qwen3-0.6B k/v", 1024, 1024, 1024), ("Qwen3-0.6B o", 1024, 2048, 1024),
              ("Llama-3.2-1B q|k|v fused", 1024, 2048, 3072), ("Llama-3.2-1B gate|up fused", 1024, 2048, 16384),
              ("Qwen3-0.6B q|k|v fused", 1024, 1024, 4096), ("Qwen3-0.6B gate|up fused", 1024, 1024, 6144)]
    timed(shapes)


def timed(shapes):
    """Prints the median time and rate of torch.mm for each (name, M, K, N)."""
    for name, m, k, n in shapes:
        x = torch.randn(m, k, device="cuda")
        w = torch.randn(n, k, device="cuda")
        for _ in range(3):
            torch.mm(x, w.t())
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.mm(x, w.t())
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        ms = statistics.median(ts)
        print(f"{name:28} {m:6} {k:6} {n:7} {ms:9.3f} {2 * m * k * n / ms / 1e9:8.1f}")
        del x, w


if __name__ == "__main__":
    main()
