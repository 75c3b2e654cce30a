"""Writes merge/: PEFT's merge_and_unload of a LoRA adapter, for TestMergePEFT.

Four cases, on the shared tiny fixture models ($MEAZO_SHARED/fixtures/models,
made by gen_fixtures.py; its manifest.json says how):

- llama-tiny, float32: r = 4, lora_alpha = 12 (scale 3) on q_proj and v_proj;
- qwen3-tiny's bf16/ checkpoint, loaded in bfloat16 as a bf16 model is used:
  r = 4, lora_alpha = 8 with use_rslora (scale 8/sqrt(4) = 4);
- llama-tiny-all and qwen3-tiny-bf16-all: the same on every projection of the
  layers (target_modules="all-linear": q, k, v, o, gate, up and down_proj);
- opt-tiny-f16: the repository's OPT fixture (model/testdata/opt/opt-tiny)
  loaded in float16 and saved so by save_pretrained into merge/opt-tiny-f16/model
  (as facebook/opt-1.3b is published in float16): r = 4, lora_alpha = 8 on every
  projection (q, k, v, out_proj, fc1, fc2).

PEFT starts B at zero (an adapter that changes nothing), so A and B are drawn
here (N(0, 0.2^2) and N(0, 0.3^2)), as training would leave them. Each case
writes into merge/<case>/:

- adapter/: the adapter, saved by PEFT's save_pretrained (float32 tensors);
- reference.safetensors:
    input_ids      int64 [2, 8]  two token rows (no padding)
    merged/<name>  the adapted projections' weights of every layer after
                   merge_and_unload, in the model's dtype (F32; BF16 for the
                   bf16 cases, F16 for the float16 one), named as in the
                   model's state dict
    logits_merged  float32 [2, 8, V]: the merged model's forward in float32
                   (the bf16 and float16 cases: their weights widened to
                   float32, as meazo-go computes with them)
    logits_lora    float32 [2, 8, V]: the unmerged PeftModel's forward
                   (float32 case only)

The adapter is saved, loaded again with PeftModel.from_pretrained (which
upcasts bf16/fp16 adapter weights to float32: autocast_adapter_dtype=True) and
merged, as a user merges a trained adapter. The script checks that the merge is
W + (B @ A) * scaling computed in float32 and, for the bf16 and float16 models,
rounded once to the weight's dtype (PEFT's get_delta_weight in the adapter's
float32, then the in-place add to the weight, which torch computes in float32).

    PYTHONPATH=$MEAZO_SHARED/pylib /usr/bin/python3 lora/testdata/make_merge_fixtures.py $MEAZO_SHARED [CASE ...]

makes every case, or the cases named.
"""
import os
import sys

import torch113_compat  # noqa: F401  (pylib: transformers 4.51 on Debian's torch 1.13)
import torch
import transformers
import peft
from safetensors.torch import save_file

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "merge")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QV = ["q_proj", "v_proj"]
CASES = [
    # name, model dir under fixtures/models, class, dtype, LoRA settings
    ("llama-tiny", "llama-tiny", transformers.LlamaForCausalLM, torch.float32, dict(r=4, lora_alpha=12, target_modules=QV)),
    ("qwen3-tiny-bf16", "qwen3-tiny/bf16", transformers.Qwen3ForCausalLM, torch.bfloat16,
     dict(r=4, lora_alpha=8, use_rslora=True, target_modules=QV)),
    ("llama-tiny-all", "llama-tiny", transformers.LlamaForCausalLM, torch.float32,
     dict(r=4, lora_alpha=12, target_modules="all-linear")),
    ("qwen3-tiny-bf16-all", "qwen3-tiny/bf16", transformers.Qwen3ForCausalLM, torch.bfloat16,
     dict(r=4, lora_alpha=8, use_rslora=True, target_modules="all-linear")),
    ("opt-tiny-f16", "repo:model/testdata/opt/opt-tiny", transformers.OPTForCausalLM, torch.float16,
     dict(r=4, lora_alpha=8, target_modules="all-linear")),
]


def load(cls, path, dtype):
    return cls.from_pretrained(path, torch_dtype=dtype, attn_implementation="eager").eval()


def make_adapter(cls, path, dtype, lora, out):
    base = load(cls, path, dtype)
    cfg = peft.LoraConfig(lora_dropout=0.0, task_type="CAUSAL_LM", **lora)
    model = peft.get_peft_model(base, cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.normal_(0.0, 0.2)
            elif "lora_B" in name:
                p.normal_(0.0, 0.3)
    os.makedirs(out, exist_ok=True)
    # Without Jinja2 (absent in pylib) PEFT cannot write its model card; a
    # README already there is kept (pylib/SOURCES.md), with PEFT's lines
    # added, which name this machine's path: it is written again after.
    def readme():
        with open(os.path.join(out, "README.md"), "w") as f:
            f.write("A LoRA adapter for TestMergePEFT, written by ../../make_merge_fixtures.py.\n")
    readme()
    model.save_pretrained(out)
    readme()
    # A path that is no machine's: the adapter is used with the fixture's model.
    cfg_path = os.path.join(out, "adapter_config.json")
    with open(cfg_path) as f:
        text = f.read()
    with open(cfg_path, "w") as f:
        f.write(text.replace(path, ""))


def check_formula(model, merged, dtype):
    """merged's adapted weights are (W.float() + (B @ A) * scaling).to(dtype), bit for bit; returns their keys."""
    keys = []
    for name, mod in model.named_modules():
        if not isinstance(mod, peft.tuners.lora.Linear):
            continue
        a, b = mod.lora_A["default"].weight, mod.lora_B["default"].weight
        assert a.dtype == torch.float32 and b.dtype == torch.float32, (name, a.dtype)
        w = mod.base_layer.weight
        want = (w.float() + (b @ a) * mod.scaling["default"]).to(dtype)
        key = name.removeprefix("base_model.model.") + ".weight"
        assert torch.equal(merged[key], want), key
        keys.append(key)
    return keys


def model_path(shared, name, rel, cls, dtype):
    """The case's base model: a shared fixture, or (repo:PATH) a repository
    fixture saved in dtype into merge/NAME/model first."""
    if not rel.startswith("repo:"):
        return os.path.join(shared, "fixtures", "models", rel)
    out = os.path.join(HERE, name, "model")
    load(cls, os.path.join(REPO, rel.removeprefix("repo:")), dtype).save_pretrained(out, safe_serialization=True)
    return out


def run_case(shared, name, rel, cls, dtype, lora):
    path = model_path(shared, name, rel, cls, dtype)
    out = os.path.join(HERE, name)
    adapter = os.path.join(out, "adapter")
    torch.manual_seed(20261201)
    make_adapter(cls, path, dtype, lora, adapter)
    ids = torch.randint(3, 512, (2, 8))
    ref = {"input_ids": ids}

    model = peft.PeftModel.from_pretrained(load(cls, path, dtype), adapter).eval()
    if dtype == torch.float32:
        with torch.no_grad():
            ref["logits_lora"] = model(input_ids=ids).logits.float().contiguous()
    # check_formula needs the LoRA modules, which merge_and_unload removes:
    # compute the expected weights first, on a second copy.
    twin = peft.PeftModel.from_pretrained(load(cls, path, dtype), adapter).eval()
    merged = model.merge_and_unload().eval()
    state = merged.state_dict()
    for k in check_formula(twin, state, dtype):
        v = state[k]
        assert v.dtype == dtype, (k, v.dtype)
        ref["merged/" + k] = v.contiguous()
    # The merged model's forward in float32 (exact widening for bf16).
    wide = load(cls, path, torch.float32)
    wide.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    with torch.no_grad():
        ref["logits_merged"] = wide(input_ids=ids).logits.float().contiguous()
    save_file(ref, os.path.join(out, "reference.safetensors"), metadata={"format": "pt"})
    print(f"{name}: wrote {out}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: make_merge_fixtures.py $MEAZO_SHARED [CASE ...]")
    torch.set_num_threads(1)
    for case in CASES:
        if len(sys.argv) == 2 or case[0] in sys.argv[2:]:
            run_case(sys.argv[1], *case)


if __name__ == "__main__":
    main()
