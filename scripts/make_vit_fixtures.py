#!/usr/bin/env python3
"""Makes the tiny ViT reference fixture under model/testdata/vit/vit-tiny/, the way ../shared/fixtures/models were
made (their manifest.json): a tiny random ViTForImageClassification of google/vit-base-patch16-224-in21k's shape
(pre-LayerNorm encoder, exact-erf GELU, biased q/k/v, layer_norm_eps 1e-12, 16×16 patches) with Oxford-IIIT Pets'
37 classes, written by HF transformers' save_pretrained, its preprocessor_config.json, the logits, hidden states and
loss HF computes for four of imageproc's test images in float32 and in exact float64, and a PEFT LoRA adapter (r = 4
on query and value, the classifier in modules_to_save, as the paper's ViT runs) with its logits.

Run with Debian's python3 (python3-torch 1.13, python3-pil 9.4.0) on the vendored transformers 4.51 and PEFT 0.15.2:

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_vit_fixtures.py model/testdata/vit

reference.safetensors holds:
  pixel_values              float32 [4][3][64][64]  ViTImageProcessor on IMAGES (imageproc/testdata, PNG only)
  labels                    int64 [4]
  logits_f32, logits_f64    [4][37]                 the model on pixel_values (float64: the model and input in float64)
  hidden_states_f32/_f64    [L+1][4][17][64]        the encoder's inputs and each layer's output (before the final LayerNorm)
  loss_f32, loss_f64        [1]                     mean cross-entropy of the logits against labels
  lora_logits_f32/_f64      [4][37]                 with the adapter in lora/ applied
It also prints PEFT's trainable and total counts for ViT-B/16 with 37 classes (618,277 of 85,827,109 in the paper).
"""
import os
import sys

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import numpy as np
import torch
from PIL import Image
from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import save_file

import fixturelib

SEED = 5171
IMAGES = ["scene_300x200.png", "scene_97x61.png", "alpha_120x90.png", "gray_150x100.png"]
LABELS = [3, 17, 36, 0]
NUM_LABELS = 37

# google/vit-base-patch16-224-in21k's config.json, shrunk: 64×64 images (16 patches + CLS), width 64, 3 layers.
TINY = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128, hidden_act="gelu",
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.02,
            layer_norm_eps=1e-12, image_size=64, patch_size=16, num_channels=3, qkv_bias=True,
            num_labels=NUM_LABELS, id2label={i: "class_%d" % i for i in range(NUM_LABELS)},
            label2id={"class_%d" % i: i for i in range(NUM_LABELS)})
PREPROCESSOR = {"do_normalize": True, "do_resize": True, "image_processor_type": "ViTImageProcessor",
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 64}

# Weight scales: larger than init_std 0.02, so attention is far from uniform and the logits far apart. LayerNorm
# weights 1 + 0.25·N, every bias 0.1·N.
SCALES = {"patch_embeddings": 0.1, "cls_token": 0.5, "position_embeddings": 0.5, "query": 0.25, "key": 0.25,
          "value": 0.15, "attention.output.dense": 0.15, "intermediate.dense": 0.15, "output.dense": 0.1,
          "classifier": 0.2}


def init_weights(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if "layernorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.25 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                scale = next(s for k, s in SCALES.items() if k in name)
                p.copy_(scale * noise)


def run(model, pixels, labels):
    with torch.no_grad():
        out = model(pixel_values=pixels, labels=labels, output_hidden_states=True)
    return out


def counts_of_vit_base():
    """PEFT's trainable parameters of ViT-B/16 (in21k's config, 37 classes), LoRA r = 16 on query and value plus the
    classifier, and the model's own count (base and head, no adapter)."""
    cfg = ViTConfig(num_labels=NUM_LABELS)  # ViTConfig's defaults are ViT-B/16 at 224
    model = ViTForImageClassification(cfg)
    total = sum(p.numel() for p in model.parameters())
    peft_model = get_peft_model(model, LoraConfig(r=16, lora_alpha=16, target_modules=["query", "value"],
                                                  modules_to_save=["classifier"]))
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    return trainable, total


def main(out_root):
    out = os.path.join(out_root, "vit-tiny")
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    config = ViTConfig(**TINY)
    model = fixturelib.new_model(ViTForImageClassification, config, init_weights, gen, out)
    fixturelib.write_json(os.path.join(out, "preprocessor_config.json"), PREPROCESSOR)

    proc = ViTImageProcessor.from_json_file(os.path.join(out, "preprocessor_config.json"))
    imgdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "imageproc", "testdata")
    images = [Image.open(os.path.join(imgdir, n)).convert("RGB") for n in IMAGES]
    pixels = torch.from_numpy(proc(images, return_tensors="np")["pixel_values"])
    labels = torch.tensor(LABELS, dtype=torch.int64)

    ref = {"pixel_values": pixels.contiguous(), "labels": labels}
    o32 = run(model, pixels, labels)
    m64 = ViTForImageClassification(config).eval()
    m64.load_state_dict(model.state_dict())
    m64 = m64.double()
    o64 = run(m64, pixels.double(), labels)
    for tag, o in (("f32", o32), ("f64", o64)):
        ref["logits_" + tag] = o.logits.contiguous()
        ref["hidden_states_" + tag] = torch.stack(o.hidden_states).contiguous()
        ref["loss_" + tag] = o.loss.reshape(1)

    lora_cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], modules_to_save=["classifier"],
                          lora_dropout=0.0, bias="none")
    lora32 = get_peft_model(model, lora_cfg).eval()
    with torch.no_grad():  # random A and B, and the classifier's copy moved, so the test sees both applied
        for name, p in lora32.named_parameters():
            if "lora_" in name:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
            elif "modules_to_save" in name:
                p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
    fixturelib.save_lora(lora32, os.path.join(out, "lora"))
    ref["lora_logits_f32"] = run(lora32, pixels, labels).logits.contiguous()
    base64 = ViTForImageClassification(config).eval()
    base64.load_state_dict(m64.float().state_dict())
    lora64 = PeftModel.from_pretrained(base64.double(), os.path.join(out, "lora")).eval().double()
    ref["lora_logits_f64"] = run(lora64, pixels.double(), labels).logits.contiguous()
    save_file(ref, os.path.join(out, "reference.safetensors"),
              metadata={"made_by": "scripts/make_vit_fixtures.py", "images": ",".join(IMAGES)})

    trainable, total = counts_of_vit_base()
    print("ViT-B/16, 37 classes, LoRA r=16 on query/value + classifier: %d trainable of %d" % (trainable, total))


if __name__ == "__main__":
    main(sys.argv[1])
