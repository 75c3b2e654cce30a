#!/usr/bin/env python3
"""The real PEFT side of the adapter round-trip tests (lora/peft_real_test.go,
prompttune/peft_real_test.go): HF transformers + PEFT load adapters meazo-go
saved, make adapters of their own, and compute fp32 logits, for the Go tests
to compare with meazo-go's.

    python3 scripts/peft_check.py SPEC.json

Runs on Debian's python3-torch (1.13) with ../shared/pylib on PYTHONPATH
(transformers 4.51, peft 0.15; pylib/SOURCES.md). SPEC.json:

    {"jobs": [{"kind": "base", ...COMMON},
              {"kind": "load", "adapter": DIR, ...COMMON},
              {"kind": "make-lora", "dir": DIR, "r": 4, "alpha": 8, "targets": ["q_proj", "v_proj"] or "all-linear", "seed": 1, ["layers": [1, 2],] ...COMMON},
              {"kind": "make-prompt", "dir": DIR, "n": 5, "seed": 1, ["safe_serialization": false,] ...COMMON},
              {"kind": "make-prompt-text", "dir": DIR, "n": 5, "text": TEXT, "ids": [...], "seed": 1, ...COMMON}]}

where COMMON is "base": MODEL_DIR, "input_ids": [[...]], "attention_mask": [[...]], "out": FILE. One run
serves many jobs: importing torch, transformers and PEFT is most of its time.

A ViTForImageClassification base (lora/peft_real_vit_test.go, train/merge_vit_test.go) takes "pixel_values":
FILE (a safetensors file whose "pixel_values" [B, C, H, W] float32 are the images) instead of "input_ids" and
"attention_mask", and the "base", "load" and "merge" kinds only; its "logits" are [B, classes].

    {"kind": "merge", "adapter": DIR, ...COMMON}: the logits of PEFT's merge_and_unload of the adapter in DIR
        (PeftModel.from_pretrained on the base, then merge_and_unload), and no "adapter/" tensors.
    "strict": true in a "base" job: from_pretrained must find every weight of the model in the checkpoint and
        nothing else (output_loading_info: no missing, unexpected or mismatched keys), or the job fails.

Each job writes FILE (safetensors): "logits" (float32 [B, T', V]; T' counts a
prompt's virtual tokens too, as PEFT returns them) and, but for "base", each
tensor of the adapter as PEFT holds it (get_peft_model_state_dict), under
"adapter/<name as saved>". "make-*" also saves the adapter to DIR with
PEFT's save_pretrained (make-prompt with "safe_serialization": false, as
adapter_model.bin). Each job starts from a freshly loaded base model
(PEFT changes the modules it wraps).

"make-prompt-text" is PEFT's own TEXT initialisation (prompt_tuning_init
"TEXT", tokenizer_name_or_path the base model): pylib has no tokenizers
library, so AutoTokenizer.from_pretrained gives a stand-in whose
tokenizer(TEXT)["input_ids"] are "ids" (what the model's tokenizer gives;
meazo-go's tokenizer is checked against HF's elsewhere); PEFT repeats or
cuts them to n and copies their embeddings.
"""
import json
import os
import sys

import torch113_compat  # noqa: F401  (pylib: what transformers 4.51 needs from torch >= 2)
import torch
import transformers
import peft
from safetensors.torch import save_file


def qwen2_class():
    """Qwen2ForCausalLM from scripts/ref_src/qwen2 (pylib has no models/qwen2: scripts/make_qwen2_fixtures.py says
    which files of its transformers commit go there; they are not committed)."""
    import types
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ref_src", "qwen2")
    if not os.path.exists(os.path.join(src, "modeling_qwen2.py")):
        raise SystemExit(f"Qwen2ForCausalLM needs transformers' models/qwen2 in {src} (scripts/make_qwen2_fixtures.py)")
    if "transformers.models.qwen2" not in sys.modules:
        pkg = types.ModuleType("transformers.models.qwen2")
        pkg.__path__ = [src]
        sys.modules["transformers.models.qwen2"] = pkg
    from transformers.models.qwen2.modeling_qwen2 import Qwen2ForCausalLM
    return Qwen2ForCausalLM


def load_base(model_dir, strict=False):
    with open(os.path.join(model_dir, "config.json")) as f:
        arch = json.load(f)["architectures"][0]
    if arch == "Qwen2ForCausalLM":
        cls = qwen2_class()
    else:
        cls = {"LlamaForCausalLM": transformers.LlamaForCausalLM, "Qwen3ForCausalLM": transformers.Qwen3ForCausalLM,
               "OPTForCausalLM": transformers.OPTForCausalLM,
               "ViTForImageClassification": transformers.ViTForImageClassification}[arch]
    m, info = cls.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    if strict and any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
        raise SystemExit(f"peft_check.py: {model_dir} does not load whole in {cls.__name__}: {info}")
    return m.eval()


def logits_of(model, job):
    if "pixel_values" in job:  # a ViT's images
        from safetensors.torch import load_file
        pixels = load_file(job["pixel_values"])["pixel_values"].float()
        with torch.no_grad():
            return model(pixel_values=pixels).logits.float().contiguous()
    ids = torch.tensor(job["input_ids"], dtype=torch.long)
    mask = torch.tensor(job["attention_mask"], dtype=torch.long)
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask).logits.float().contiguous()


def write(path, model, logits):
    out = {"logits": logits}
    if model is not None:
        for k, v in peft.get_peft_model_state_dict(model).items():
            out["adapter/" + k] = v.detach().float().contiguous()
    save_file(out, path)


def save_adapter(model, d, safe_serialization=True):
    os.makedirs(d, exist_ok=True)
    # Without Jinja2 (absent here) PEFT cannot write its model card; a README
    # already there is kept (pylib/SOURCES.md).
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("PEFT adapter made by scripts/peft_check.py\n")
    model.save_pretrained(d, safe_serialization=safe_serialization)


class IdsTokenizer:
    """AutoTokenizer's stand-in for make-prompt-text: the ids of one text."""

    def __init__(self, text, ids):
        self.text, self.ids = text, ids

    def __call__(self, text, **kwargs):
        if text != self.text:
            raise SystemExit(f"peft_check.py: PEFT tokenized {text!r}, the job's text is {self.text!r}")
        return {"input_ids": list(self.ids)}


def run(job):
    base = load_base(job["base"], job.get("strict", False))
    kind = job["kind"]
    if kind == "base":
        write(job["out"], None, logits_of(base, job))
        return
    if kind == "load":
        model = peft.PeftModel.from_pretrained(base, job["adapter"]).eval()
        write(job["out"], model, logits_of(model, job))
        return
    if kind == "merge":
        model = peft.PeftModel.from_pretrained(base, job["adapter"]).eval().merge_and_unload()
        write(job["out"], None, logits_of(model, job))
        return
    torch.manual_seed(job["seed"])
    if kind == "make-lora":
        cfg = peft.LoraConfig(r=job["r"], lora_alpha=job["alpha"], target_modules=job["targets"],
                              layers_to_transform=job.get("layers"), lora_dropout=0.0, task_type="CAUSAL_LM")
        model = peft.get_peft_model(base, cfg)
        # PEFT starts B at zero (an adapter that changes nothing): give A and
        # B values, as training would.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.normal_(0.0, 0.2)
    elif kind == "make-prompt":
        cfg = peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=job["n"], prompt_tuning_init="RANDOM")
        model = peft.get_peft_model(base, cfg)
        # Token embeddings of random ids, the scale of PEFT's TEXT init.
        with torch.no_grad():
            emb = base.get_input_embeddings().weight
            ids = torch.randint(0, emb.shape[0], (job["n"],))
            model.prompt_encoder["default"].embedding.weight.copy_(emb[ids])
    elif kind == "make-prompt-text":
        tok = IdsTokenizer(job["text"], job["ids"])
        auto = transformers.AutoTokenizer.from_pretrained
        transformers.AutoTokenizer.from_pretrained = lambda *args, **kwargs: tok
        try:
            cfg = peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=job["n"], prompt_tuning_init="TEXT",
                                          prompt_tuning_init_text=job["text"], tokenizer_name_or_path=job["base"])
            model = peft.get_peft_model(base, cfg)
        finally:
            transformers.AutoTokenizer.from_pretrained = auto
    else:
        raise SystemExit(f"peft_check.py: unknown job kind {kind!r}")
    model.eval()
    save_adapter(model, job["dir"], job.get("safe_serialization", True))
    write(job["out"], model, logits_of(model, job))


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: peft_check.py SPEC.json")
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    torch.set_num_threads(1)  # the Go test runs beside others; results do not depend on it
    for job in spec["jobs"]:
        run(job)


if __name__ == "__main__":
    main()
