#!/usr/bin/env python3
"""Makes model/testdata/vit/vit-tiny/lora-all-linear/: a PEFT LoRA adapter of the tiny ViT fixture (made by
scripts/make_vit_fixtures.py) on every linear layer of its encoder, target_modules="all-linear" (query, key, value,
attention.output.dense, intermediate.dense and output.dense of every layer; the classifier in modules_to_save, as the
paper's ViT runs), r = 4, lora_alpha = 8, saved by PEFT's save_pretrained, and the logits PEFT computes with it on the
fixture's four images.

Run with Debian's python3 (python3-torch 1.13, python3-pil 9.4.0) on the vendored transformers 4.51 and PEFT 0.15.2:

    PYTHONPATH=../shared/pylib:scripts /usr/bin/python3 scripts/make_vit_lora_fixture.py model/testdata/vit/vit-tiny

lora-all-linear/ holds adapter_config.json (target_modules as PEFT 0.15 saves "all-linear" on a model this small:
the full names of the 18 projections and "classifier", fewer than 20, so not shortened; sorted here, as PEFT writes
a set in the hash seed's order), adapter_model.safetensors, and reference.safetensors:
  lora_logits_f32   [4][37]  PEFT's model in float32 on vit-tiny/reference.safetensors' pixel_values
  lora_logits_f64   [4][37]  the same adapter loaded by PeftModel.from_pretrained onto the model in float64

    ... scripts/make_vit_lora_fixture.py --check model/testdata/vit/vit-tiny DIR

loads the adapter in DIR (one meazo-go saved) with PeftModel.from_pretrained onto the fixture's model in float64,
prints the modules PEFT adapted and the largest difference of its logits from lora_logits_f64 (0: the same adapter).

It also prints PEFT's trainable count of ViT-B/16 (37 classes) with LoRA r = 16 on all linear layers.

lora-layers/ is the same for an adapter on some layers: target_modules ["query", "value", "output.dense"]
(output.dense also names attention.output.dense), layers_to_transform [0, 2] and layers_pattern "layer" (the
encoder's vit.encoder.layer.N), r = 4, lora_alpha = 8, random A, B and head, so PEFT adapts 8 modules of layers 0
and 2 and none of layer 1; its reference.safetensors holds the same two logits.

    ... scripts/make_vit_lora_fixture.py --check model/testdata/vit/vit-tiny DIR lora-layers

compares with lora-layers' lora_logits_f64 instead.
"""
import os
import sys

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
from transformers import ViTConfig, ViTForImageClassification
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file

import fixturelib

SEED = 9173


def pixels_of(vit_dir):
    return load_file(os.path.join(vit_dir, "reference.safetensors"))["pixel_values"]


def logits(model, pixels):
    with torch.no_grad():
        return model(pixel_values=pixels).logits.contiguous()


def peft_f64(vit_dir, adapter_dir):
    base = ViTForImageClassification.from_pretrained(vit_dir).eval().double()
    return PeftModel.from_pretrained(base, adapter_dir).eval().double()


def make(vit_dir):
    make_one(vit_dir, "lora-all-linear", SEED, target_modules="all-linear")
    make_one(vit_dir, "lora-layers", SEED + 1, target_modules=["query", "value", "output.dense"],
             layers_to_transform=[0, 2], layers_pattern="layer")

    big = get_peft_model(ViTForImageClassification(ViTConfig(num_labels=37)),
                         LoraConfig(r=16, lora_alpha=16, target_modules="all-linear", modules_to_save=["classifier"]))
    trainable = sum(p.numel() for p in big.parameters() if p.requires_grad)
    print("ViT-B/16, 37 classes, LoRA r=16 on all-linear + classifier: %d trainable" % trainable)


def make_one(vit_dir, name, seed, **lora_args):
    out = os.path.join(vit_dir, name)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    pixels = pixels_of(vit_dir)
    model = ViTForImageClassification.from_pretrained(vit_dir).eval()
    cfg = LoraConfig(r=4, lora_alpha=8, modules_to_save=["classifier"], lora_dropout=0.0, bias="none", **lora_args)
    pm = get_peft_model(model, cfg).eval()
    with torch.no_grad():  # random A and B (B not 0: the deltas matter), the classifier's copy moved
        for name, p in pm.named_parameters():
            if "lora_" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
            elif "modules_to_save" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
    adapted = sorted(pm.base_model.targeted_module_names)
    print("PEFT adapted %d modules: %s" % (len(adapted), ", ".join(adapted)))
    fixturelib.save_lora(pm, out, sort_targets=True)
    ref = {"lora_logits_f32": logits(pm, pixels)}
    ref["lora_logits_f64"] = logits(peft_f64(vit_dir, out), pixels.double())
    save_file(ref, os.path.join(out, "reference.safetensors"),
              metadata={"made_by": "scripts/make_vit_lora_fixture.py"})


def check(vit_dir, adapter_dir, fixture="lora-all-linear"):
    pm = peft_f64(vit_dir, adapter_dir)
    print("PEFT adapted %d modules: %s" % (len(pm.base_model.targeted_module_names),
                                          ", ".join(sorted(pm.base_model.targeted_module_names))))
    got = logits(pm, pixels_of(vit_dir).double())
    want = load_file(os.path.join(vit_dir, fixture, "reference.safetensors"))["lora_logits_f64"]
    print("max |logits - lora_logits_f64| = %.3g" % (got - want).abs().max().item())


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(*sys.argv[2:5])
    else:
        make(sys.argv[1])
