"""Writes peft-r2/: a LoRA adapter saved by PEFT itself, for ExampleLoad.

The base model is a random two-layer Llama of hidden size 16 (the config in
the example); the adapter has r = 2, lora_alpha = 4 on q_proj and v_proj,
with B drawn at random too (init_lora_weights=False) so that it is not zero.

    PYTHONPATH=$MEAZO_SHARED/pylib /usr/bin/python3 lora/testdata/make_peft_r2.py
"""
import os

import torch
import torch113_compat  # noqa: F401  (pylib: transformers 4.51 on Debian's torch 1.13)
import transformers
from peft import LoraConfig, get_peft_model

torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=1, head_dim=8)
base = transformers.LlamaForCausalLM(cfg)
lora = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                  init_lora_weights=False, task_type="CAUSAL_LM")
model = get_peft_model(base, lora)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peft-r2")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "README.md"), "w") as f:  # pylib has no Jinja2 to write PEFT's model card
    f.write("A LoRA adapter for ExampleLoad, written by ../make_peft_r2.py.\n")
model.save_pretrained(out)
