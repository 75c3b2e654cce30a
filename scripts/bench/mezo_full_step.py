#!/usr/bin/env python3
"""MeZO's full-parameter ZO step in PyTorch, the peer `meazo-bench fullstep` is measured against.

The step is MeZO's (princeton-nlp/MeZO, large_models/trainer.py: zo_step, zo_perturb_parameters, zo_update), written
here from its description: every parameter perturbed in place by torch.normal noise drawn from a seeded generator
(+eps, then -2 eps, then +eps back), the two losses from the model's forward with labels (HF's loss over the
batch, logits at every position), the projected gradient, then the noise drawn again and the update
theta -= lr * (g * z + weight_decay * theta). Random weights of the published config; the batch is B x T random
tokens, the last 3 of each row supervised, as meazo-bench's.

    python3 scripts/bench/mezo_full_step.py --model qwen06b --shape 16x64 --what step
    python3 scripts/bench/mezo_full_step.py --model qwen06b --shape 16x64 --what forward   # 2 forwards, then the 2B-row forward

It prints seconds (median of --reps after --warm) and the peak resident set (CPU; /proc/self/clear_refs resets it
after the model is built) or peak CUDA memory of what it timed. CPU: Debian's python3-torch with the transformers
in ../shared/pylib (PYTHONPATH); GPU: the device machine's PyTorch and transformers.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

# The published configs (config.json of Qwen/Qwen3-0.6B and meta-llama/Llama-3.2-1B), the keys the models read.
CONFIGS = {
    "qwen06b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
        "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28,
        "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": True,
        "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
    },
    "llama1b": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
        "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "use_cache": True, "vocab_size": 128256,
    },
}


def build_model(name, dtype, device):
    try:
        import torch113_compat  # noqa: F401  (../shared/pylib on Debian's torch 1.13; absent elsewhere)
    except ImportError:
        pass
    import transformers
    cfg = dict(CONFIGS[name])
    arch = cfg["architectures"][0]
    config_class = getattr(transformers, arch.replace("ForCausalLM", "Config"))
    config = config_class(**{k: v for k, v in cfg.items() if k != "model_type"})
    config._attn_implementation = "eager"
    torch.manual_seed(1)
    # On a GPU the weights are drawn there (PyTorch 2's device context), not on the host and copied: minutes saved
    # at 8B; PyTorch 1 (the CPU check) has no such context and builds on the CPU.
    where = torch.device(device) if device != "cpu" and hasattr(torch.device, "__enter__") else contextlib.nullcontext()
    with where:
        model = getattr(transformers, arch)(config)
    return model.to(dtype).to(device).eval()


def make_batch(vocab, b, t, device):
    rng = np.random.default_rng(3)
    ids = torch.tensor(rng.integers(0, vocab, size=(b, t)), dtype=torch.long, device=device)
    labels = torch.full_like(ids, -100)
    labels[:, -3:] = ids[:, -3:]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


class MeZO:
    """MeZO's in-place step (ZO-SGD) over every parameter of the model."""

    def __init__(self, model, eps, lr, weight_decay, device):
        self.model, self.eps, self.lr, self.wd = model, eps, lr, weight_decay
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.gen = torch.Generator(device=device)
        self.rng = np.random.default_rng(0)

    def perturb(self, seed, scale):
        self.gen.manual_seed(seed)
        for _, p in self.params:
            z = torch.normal(mean=0, std=1, size=p.data.size(), generator=self.gen, device=p.device, dtype=p.dtype)
            p.data = p.data + scale * z * self.eps

    def loss(self, batch):
        with torch.inference_mode():
            return self.model(**batch).loss.detach()

    def step(self, batch):
        seed = int(self.rng.integers(1_000_000_000))
        self.perturb(seed, 1)
        l1 = self.loss(batch)
        self.perturb(seed, -2)
        l2 = self.loss(batch)
        g = ((l1 - l2) / (2 * self.eps)).item()
        self.perturb(seed, 1)
        self.gen.manual_seed(seed)
        for name, p in self.params:
            z = torch.normal(mean=0, std=1, size=p.data.size(), generator=self.gen, device=p.device, dtype=p.dtype)
            decay = self.wd if ("bias" not in name and "layer_norm" not in name and "layernorm" not in name) else 0.0
            p.data = p.data - self.lr * (g * z + decay * p.data)
        return l1.item(), l2.item()


def reset_peak(device):
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")


def peak(device):
    if device == "cuda":
        torch.cuda.synchronize()
        return "peak CUDA memory %.3f GiB (allocated), %.3f GiB (reserved)" % (
            torch.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_reserved() / 2**30)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return "peak RSS %.3f GiB" % (int(line.split()[1]) / 2**20)
    return "peak RSS unknown"


def blas_library():
    """The BLAS library the process has loaded (Debian's torch calls whatever
    libblas.so.3 points at: the reference BLAS is some 40x slower than
    OpenBLAS, so a CPU figure must say which one ran)."""
    torch.ones(2, 2) @ torch.ones(2, 2)
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and "/" in line})
        return ", ".join(os.path.realpath(x) for x in libs) or "none loaded"
    except OSError:
        return "unknown"


def timed(fn, warm, reps, device):
    ts = []
    for i in range(warm + reps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= warm:
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen06b", choices=sorted(CONFIGS))
    ap.add_argument("--shape", default="16x64")
    ap.add_argument("--what", default="step", choices=["step", "forward"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=1e-7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    b, t = (int(x) for x in args.shape.split("x"))
    dtype = getattr(torch, args.dtype)
    model = build_model(args.model, dtype, args.device)
    n = sum(p.numel() for p in model.parameters())
    print("# %s (%d parameters), %s, %s, torch %s, %d threads" % (args.model, n, args.dtype, args.shape, torch.__version__, args.threads))
    if args.device == "cpu":
        blas = blas_library()
        print("# BLAS: %s" % blas)
        if not any(name in blas.lower() for name in ("openblas", "mkl", "blis")):
            # Debian's python3-torch without its recommends leaves libblas.so.3 on
            # netlib's reference BLAS: such a figure says nothing about PyTorch.
            msg = "# WARNING: not an optimised BLAS (install libopenblas0-pthread); these times are not PyTorch's"
            print(msg)
            print(msg, file=sys.stderr)
    batch = make_batch(model.config.vocab_size, b, t, args.device)
    reset_peak(args.device)
    if args.what == "forward":
        mezo = MeZO(model, args.eps, args.lr, 0.0, args.device)
        sec = timed(lambda: (mezo.loss(batch), mezo.loss(batch)), args.warm, args.reps, args.device)
        print("2 forwards of %s: %.3f s" % (args.shape, sec))
        wide = make_batch(model.config.vocab_size, 2 * b, t, args.device)
        mezo.loss(wide)
        print("forward of %dx%d: done" % (2 * b, t))
    else:
        mezo = MeZO(model, args.eps, args.lr, 0.0, args.device)
        losses = []
        sec = timed(lambda: losses.append(mezo.step(batch)), args.warm, args.reps, args.device)
        print("MeZO full-parameter step (ZO-SGD, q=1): %.3f s; losses %s" % (sec, json.dumps(losses[-1])))
    print(peak(args.device))


if __name__ == "__main__":
    sys.exit(main())
