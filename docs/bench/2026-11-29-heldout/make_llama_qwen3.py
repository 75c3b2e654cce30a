import sys, json
import torch113_compat, torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
from safetensors.torch import save_file
torch.manual_seed(5)
base = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
V = {
 "llama-bias": (LlamaConfig, LlamaForCausalLM, dict(attention_bias=True, mlp_bias=True)),
 "llama-headdim": (LlamaConfig, LlamaForCausalLM, dict(head_dim=24)),
 "llama-linear": (LlamaConfig, LlamaForCausalLM, dict(rope_scaling={"rope_type": "linear", "factor": 2.0})),
 "llama-yarn": (LlamaConfig, LlamaForCausalLM, dict(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16})),
 "llama-l3": (LlamaConfig, LlamaForCausalLM, dict(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}, rope_theta=500000.0, tie_word_embeddings=True)),
 "qwen3-untied": (Qwen3Config, Qwen3ForCausalLM, dict(head_dim=16, tie_word_embeddings=False)),
 "qwen3-bias": (Qwen3Config, Qwen3ForCausalLM, dict(head_dim=16, attention_bias=True)),
}
ids = torch.tensor([[1, 45, 99, 200, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]])
for name, (C, M, kw) in V.items():
    cfg = C(**{**base, **kw}); m = M(cfg).eval()
    with torch.no_grad():
        for p in m.parameters(): p.add_(torch.randn_like(p) * 0.02)
    m.save_pretrained(name, safe_serialization=True)
    with torch.no_grad(): lg = m(input_ids=ids).logits
    json.dump({"input_ids": ids.tolist()}, open(name + "/in.json", "w"))
    save_file({"logits": lg.contiguous()}, name + "/ref.safetensors")
    print(name, "ok")
