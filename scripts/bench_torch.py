#!/usr/bin/env python3
"""PyTorch CPU baseline for meazo-bench: the same forward on the same shapes.

transformers cannot be installed here (no PyPI), so this is a plain PyTorch
re-implementation of HF's eager LlamaForCausalLM / Qwen3ForCausalLM forward
(RMSNorm, rotate-half RoPE, GQA via repeat_interleave, additive causal mask,
float32 softmax, SiLU-gated MLP, tied LM head) with random float32 weights:
the same matrix products HF eager runs, without its Python-side overheads.

Run with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads otherwise spin against
the BLAS threads and slow it down up to 2.2x, which would flatter us):

  OMP_WAIT_POLICY=PASSIVE python3 scripts/bench_torch.py --config CONFIG.json \
      --shapes 1x128,8x128,8x256 --threads 2 [--mezo-step]

--mezo-step times what a MeZO step costs in PyTorch instead: two forwards of
the loss (LM head at supervised positions only is NOT done by HF: it computes
logits at every position, then the loss), with LoRA on q_proj/v_proj (r=16).
"""
import argparse
import json
import resource
import statistics
import time

import torch


def load_config(path):
    with open(path) as f:
        c = json.load(f)
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return dict(
        vocab=c["vocab_size"], hidden=c["hidden_size"], inter=c["intermediate_size"],
        layers=c["num_hidden_layers"], heads=c["num_attention_heads"],
        kv=c.get("num_key_value_heads", c["num_attention_heads"]), hd=hd,
        eps=c.get("rms_norm_eps", 1e-6), theta=c.get("rope_theta", 10000.0),
        qk_norm=c["architectures"][0] == "Qwen3ForCausalLM",
    )


def rmsnorm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model:
    def __init__(self, c, lora_r=0):
        g = torch.Generator().manual_seed(0)
        def w(*shape):
            return torch.empty(*shape).uniform_(-0.035, 0.035, generator=g)
        self.c = c
        d, hd = c["hidden"], c["hd"]
        self.embed = w(c["vocab"], d)
        self.layers = []
        for _ in range(c["layers"]):
            L = dict(
                ln1=torch.ones(d), ln2=torch.ones(d),
                q=w(c["heads"] * hd, d), k=w(c["kv"] * hd, d), v=w(c["kv"] * hd, d), o=w(d, c["heads"] * hd),
                gate=w(c["inter"], d), up=w(c["inter"], d), down=w(d, c["inter"]),
            )
            if c["qk_norm"]:
                L["qn"], L["kn"] = torch.ones(hd), torch.ones(hd)
            if lora_r:
                L["qA"], L["qB"] = w(lora_r, d), w(c["heads"] * hd, lora_r)
                L["vA"], L["vB"] = w(lora_r, d), w(c["kv"] * hd, lora_r)
            self.layers.append(L)
        self.norm = torch.ones(d)
        self.inv_freq = 1.0 / (c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))

    def forward(self, ids, mask):
        c = self.c
        B, T = ids.shape
        hd, H, KV = c["hd"], c["heads"], c["kv"]
        x = self.embed[ids]
        pos = torch.arange(T).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        minv = torch.finfo(torch.float32).min
        causal = torch.full((T, T), minv).triu(1)
        am = causal[None, None] + (1.0 - mask[:, None, None, :].float()) * minv
        for L in self.layers:
            h = rmsnorm(x, L["ln1"], c["eps"])
            q = h @ L["q"].T
            v = h @ L["v"].T
            if "qA" in L:
                q = q + (h @ L["qA"].T) @ L["qB"].T
                v = v + (h @ L["vA"].T) @ L["vB"].T
            k = h @ L["k"].T
            q = q.view(B, T, H, hd).transpose(1, 2)
            k = k.view(B, T, KV, hd).transpose(1, 2)
            v = v.view(B, T, KV, hd).transpose(1, 2)
            if c["qk_norm"]:
                q = rmsnorm(q, L["qn"], c["eps"])
                k = rmsnorm(k, L["kn"], c["eps"])
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
            a = (q @ k.transpose(2, 3)) * hd ** -0.5 + am
            a = torch.softmax(a, dim=-1, dtype=torch.float32)
            o = (a @ v).transpose(1, 2).reshape(B, T, H * hd)
            x = x + o @ L["o"].T
            h = rmsnorm(x, L["ln2"], c["eps"])
            x = x + (torch.nn.functional.silu(h @ L["gate"].T) * (h @ L["up"].T)) @ L["down"].T
        x = rmsnorm(x, self.norm, c["eps"])
        return x @ self.embed.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--shapes", default="1x128,8x128,8x256")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mezo-step", action="store_true", help="time two loss forwards with LoRA r=16 (a MeZO step)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    c = load_config(a.config)
    t0 = time.time()
    m = Model(c, lora_r=16 if a.mezo_step else 0)
    print(f"# torch {torch.__version__}: {a.config}; built in {time.time() - t0:.1f}s; {a.threads} threads")
    print(f"{'shape':8} {'seconds':>10} {'tokens/s':>12} {'peak RSS MiB':>12}")
    for s in a.shapes.split(","):
        B, T = map(int, s.split("x"))
        ids = torch.randint(0, c["vocab"], (B, T), generator=torch.Generator().manual_seed(1))
        mask = torch.ones(B, T, dtype=torch.int64)
        labels = ids.clone()
        times = []
        for rep in range(a.reps + 1):
            t = time.time()
            n_fwd = 2 if a.mezo_step else 1
            for _ in range(n_fwd):
                logits = m.forward(ids, mask)
                if a.mezo_step:
                    torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, c["vocab"]), labels[:, 1:].reshape(-1))
            if rep > 0:
                times.append(time.time() - t)
        sec = statistics.median(times)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{s:8} {sec:10.3f} {B * T / sec:12.1f} {rss:12.0f}", flush=True)


if __name__ == "__main__":
    main()
