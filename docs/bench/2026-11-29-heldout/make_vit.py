import sys, json
import torch113_compat, torch
from transformers import ViTConfig, ViTForImageClassification
from safetensors.torch import save_file
torch.manual_seed(3)
for name, kw in {"vit-noqkvbias": dict(qkv_bias=False), "vit-eps": dict(layer_norm_eps=1e-6, hidden_act="gelu"), "vit-gelunew": dict(hidden_act="gelu_new")}.items():
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=32, patch_size=8,
                    num_labels=5, **kw)
    m = ViTForImageClassification(cfg).eval()
    m.save_pretrained(name, safe_serialization=True)
    px = torch.randn(2, 3, 32, 32)
    with torch.no_grad(): lg = m(pixel_values=px).logits
    json.dump({"pixel_values": px.tolist()}, open(name + "/in.json", "w"))
    save_file({"logits": lg.contiguous()}, name + "/ref.safetensors")
    print(name, "ok")
