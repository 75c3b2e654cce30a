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
Prints one row per shape: shape, median seconds, tokens/s, peak device MiB.

  python3 scripts/gpu/bench_torch_cuda.py --config DIR_WITH_CONFIG_JSON --shapes 8x128 [--mezo-step]
"""
import argparse
import statistics
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="directory holding config.json")
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
    cfg = AutoConfig.from_pretrained(a.config)
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32, attn_implementation="eager")
    model = model.cuda().eval()
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


if __name__ == "__main__":
    main()
