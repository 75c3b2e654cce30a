#!/usr/bin/env python3
"""PyTorch on an NVIDIA GPU, as the peer of `meazo-bench forward/zostep/vitstep --backend cuda`.

The same HF model (published config, random weights built on the device in --dtype: float32 unless told,
never allocated twice), eager attention, TF32 off (--tf32: on, the careless peer):
  forward: logits at every position for each BxT batch of random tokens (kept on the GPU);
  --loss-all: the forward with every position supervised, model(input_ids, labels=input_ids).loss,
  the peer of `meazo-bench forward --loss-all`;
  --mezo-step: MeZO's step with PEFT LoRA r=16 on q_proj/v_proj: perturb +eps (noise
  regenerated from a seed, in place), loss, perturb -2eps, loss, restore, update, as the
  MeZO reference code does; the last 3 tokens of each row are supervised, as in
  `meazo-bench zostep`;
  --vit-step: the same step of a ViTForImageClassification (--config its config.json) with PEFT
  LoRA r=16 on query/value and the classifier trained whole (modules_to_save), on BxS batches of
  random pixel values in [-1, 1) (S the config's image size) and random labels: the peer of
  `meazo-bench vitstep`;
  --sgemm: cuBLAS SGEMM's rate (torch.mm, float32, TF32 off) on the models' GEMM shapes at
  M = 8x128 rows and on 8192^3, the yardstick for the forward's TFLOP/s;
  --sgemm-step: the projections at the ZO step's row counts, apart and stacked (q|k|v, gate|up).
--config is a directory holding config.json or the file itself; a multimodal config (Ministral-3's
Mistral3ForConditionalGeneration) gives its language model (text_config), as the paper fine-tunes it;
where this transformers does not know the text model's type (ministral3 before transformers 5) it
falls back to MistralForCausalLM of the same shapes and says so.
--device cpu runs the same on the CPU (a check of the script; peak MiB is then the process's peak RSS).
Prints one row per shape: shape, median seconds, tokens/s (images/s for --vit-step), peak device MiB.

  python3 scripts/gpu/bench_torch_cuda.py --config DIR_OR_CONFIG_JSON --shapes 8x128 [--mezo-step] [--dtype bfloat16]
  python3 scripts/gpu/bench_torch_cuda.py --config scripts/gpu/vit-b16-pets-config.json --shapes 32x224 --vit-step
  python3 scripts/gpu/bench_torch_cuda.py --sgemm [--sgemm-step]
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import time

import torch

if torch.__version__.startswith("1."):
    # The CPU check on Debian's torch 1.13 with ../shared/pylib's transformers 4.51: its shims, before transformers.
    import torch113_compat  # noqa: F401
import transformers

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", help="directory holding config.json, or the config.json")
    ap.add_argument("--sgemm", action="store_true", help="cuBLAS SGEMM's rate on the models' shapes")
    ap.add_argument("--sgemm-step", action="store_true", help="with --sgemm: the projections at the step's rows, apart and stacked")
    ap.add_argument("--shapes", default="8x128", help="BxT batches (--vit-step: BxS, S the image size)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mezo-step", action="store_true")
    ap.add_argument("--vit-step", action="store_true", help="MeZO's step of a ViT image classifier (--config its config.json)")
    ap.add_argument("--loss-all", action="store_true", help="forward with labels=input_ids; the loss comes back")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help="the weights' dtype (LoRA's stay float32, as PEFT keeps them)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--tf32", action="store_true",
                    help="TF32 on (float32 products with 10-bit mantissas on the tensor cores): what a peer who leaves "
                         "PyTorch's matmul precision to 'high' runs; too coarse for eps 1e-6")
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(0)
    if a.sgemm:
        sgemm(a.sgemm_step)
        return
    if not a.config:
        ap.error("--config is required (or --sgemm)")
    dev, dtype = torch.device(a.device), DTYPES[a.dtype]
    if a.vit_step:
        model, cfg, what = build_vit(a.config, dev, dtype)
    else:
        model, cfg, what = build_lm(a.config, dev, dtype, a.mezo_step)
    params = [p for p in model.parameters() if p.requires_grad] if (a.mezo_step or a.vit_step) else []
    trainable = {id(p) for p in params}
    stored = sorted({str(p.dtype).replace("torch.", "") for p in model.parameters() if id(p) not in trainable})
    trained = sorted({str(p.dtype).replace("torch.", "") for p in params})
    name = torch.cuda.get_device_name() if dev.type == "cuda" else "CPU"
    mode = ("MeZO step (LoRA r=16 on query/value, classifier trained)" if a.vit_step else "MeZO step (LoRA r=16)" if a.mezo_step
            else "forward, every position supervised, loss" if a.loss_all else "forward, logits at every position")
    print(f"# torch {torch.__version__}, transformers {transformers.__version__}, {name}, {what}, weights {'/'.join(stored)}"
          f"{', trained ' + '/'.join(trained) + f' ({sum(p.numel() for p in params)} parameters)' if params else ''}, "
          f"TF32 {'on' if a.tf32 else 'off'}, eager attention, {mode}")
    print(f"{'shape':8} {'seconds':>10} {'images/s' if a.vit_step else 'tokens/s':>12} {'peak MiB':>10}")

    def perturb(seed, scale):
        torch.manual_seed(seed)
        for p in params:
            z = torch.normal(mean=0, std=1, size=p.shape, device=p.device, dtype=p.dtype)
            p.data.add_(z, alpha=scale)

    def mezo(loss):
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
        perturb(seed, a.eps)
        l1 = loss()
        perturb(seed, -2 * a.eps)
        l2 = loss()
        perturb(seed, a.eps)
        g = (l1 - l2) / (2 * a.eps)
        perturb(seed, -a.lr * g)

    for s in a.shapes.split(","):
        b, t = map(int, s.split("x"))
        if a.vit_step:
            if t != cfg.image_size:
                raise SystemExit(f"--shapes {s}: the images of {a.config} are {cfg.image_size} pixels square")
            px = torch.rand((b, cfg.num_channels, t, t), device=dev) * 2 - 1
            classes = torch.randint(0, cfg.num_labels, (b,), device=dev)
            items = b

            def run():
                with torch.inference_mode():
                    mezo(lambda: model(pixel_values=px, labels=classes).loss.item())
        else:
            ids = torch.randint(0, cfg.vocab_size, (b, t), device=dev)
            labels = torch.full_like(ids, -100)
            labels[:, -3:] = ids[:, -3:]
            items = b * t

            def run():
                with torch.inference_mode():
                    if a.loss_all:
                        model(input_ids=ids, labels=ids).loss.item()
                    elif a.mezo_step:
                        mezo(lambda: model(input_ids=ids, labels=labels).loss.item())
                    else:
                        model(input_ids=ids).logits

        sec = timed_median(run, a.reps, dev)
        print(f"{s:8} {sec:10.4f} {items / sec:12.0f} {peak_mib(dev):10.0f}")


def read_config(path):
    """The config.json at path (a file, or a directory holding one), parsed."""
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    with open(path) as f:
        return json.load(f)


def causal_lm(raw):
    """The class and config of raw's language model (its text_config when it is multimodal) and what was
    built. The class is this transformers' for the model type (by the auto mapping's name table, which imports
    that model alone); where it has none (ministral3 before transformers 5), MistralForCausalLM, else
    LlamaForCausalLM, of the same shapes (plain RoPE with the same theta, no query scale: the same products,
    so the same time to within the RoPE's few element-wise operations), and it says so."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as names

    raw = raw.get("text_config", raw)
    kind = raw.get("model_type", "")
    args = {k: v for k, v in raw.items() if k != "model_type"}
    for k in (kind, "mistral", "llama"):
        try:
            cls = getattr(transformers, names[k])
        except (KeyError, AttributeError, ImportError, RuntimeError):
            continue
        if k == kind:
            return cls, cls.config_class(**args), kind
        rope = args.pop("rope_parameters", None) or args.pop("rope_scaling", None) or {}
        args["rope_theta"] = rope.get("rope_theta", args.get("rope_theta", 10000.0))
        return cls, cls.config_class(**args), f"{kind} as {k}: this transformers has no {kind}"
    raise SystemExit(f"transformers {transformers.__version__} has no causal LM for model type {kind!r} nor a fallback")


def with_dtype(cfg, dtype):
    """cfg set to build its model in dtype: from_config takes the config's dtype (torch_dtype before
    transformers 5, dtype since), so the weights are made once, in dtype, where they live."""
    for attr in ("dtype", "torch_dtype"):
        try:
            setattr(cfg, attr, dtype)
        except AttributeError:
            pass
    return cfg


def on(dev):
    """dev as the default device of the tensors made inside (PyTorch 2's torch.device context); PyTorch 1,
    which has none, makes them on the CPU, so it runs only --device cpu (the CPU check of this script)."""
    if hasattr(torch.device, "__enter__"):
        return torch.device(dev)
    if dev.type != "cpu":
        raise SystemExit(f"torch {torch.__version__} cannot build a model on {dev} directly")
    return contextlib.nullcontext()


def checked(model, dtype, dev):
    """model, its weights checked to be dtype on dev (a build that made them otherwise would count its
    conversion's second copy in the peak memory: an error, not a silent .to())."""
    got = {(p.dtype, p.device.type) for p in model.parameters()}
    if got != {(dtype, dev.type)}:
        raise SystemExit(f"the model was built with weights {got}, not {dtype} on {dev.type}")
    return model.eval()


def build_lm(path, dev, dtype, lora):
    cls, cfg, kind = causal_lm(read_config(path))
    cfg._attn_implementation = "eager"
    with on(dev):
        model = cls._from_config(with_dtype(cfg, dtype), attn_implementation="eager")
    model = checked(model, dtype, dev)
    what = f"{type(model).__name__} ({kind})"
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]))
    return model, cfg, what


def build_vit(path, dev, dtype):
    from peft import LoraConfig, get_peft_model
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig.from_dict(read_config(path))
    cfg._attn_implementation = "eager"
    with on(dev):
        model = ViTForImageClassification._from_config(with_dtype(cfg, dtype), attn_implementation="eager")
    model = checked(model, dtype, dev)
    what = f"ViTForImageClassification ({cfg.num_hidden_layers} layers, {cfg.num_labels} classes)"
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules=vit_query_value(model),
                                             modules_to_save=["classifier"]))
    return model, cfg, what


def vit_query_value(model):
    """The names of the attention's query and value projections in this transformers' ViT: `query` and `value`
    through transformers 4; peft found no such modules under transformers 5.17 (2026-11-28), so the names are read
    from the model, and an error lists its Linear layers where neither spelling is there."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    for pair in (["query", "value"], ["q_proj", "v_proj"]):
        if set(pair) <= names:
            return pair
    raise SystemExit(f"transformers {transformers.__version__}'s ViT has no query/value projections by a known name; "
                     f"its Linear layers are named {sorted(names)}")


def timed_median(run, reps, dev):
    """The median of reps timed runs after one warm-up, the device's peak memory counted from the first."""
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    run()  # warm-up
    sync()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_mib(dev):
    """The peak memory: the CUDA allocator's since the warm-up, or on the CPU the process's peak RSS."""
    if dev.type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
