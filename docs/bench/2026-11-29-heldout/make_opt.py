import sys, json
import torch113_compat
import torch
from transformers import OPTConfig, OPTForCausalLM
from safetensors.torch import save_file
torch.manual_seed(7)
variants = {
 "proj": dict(hidden_size=48, word_embed_proj_dim=24, do_layer_norm_before=False),  # OPT-350m style
 "prenorm-nobias": dict(hidden_size=48, word_embed_proj_dim=48, do_layer_norm_before=True, enable_bias=False),
 "noaffine": dict(hidden_size=48, word_embed_proj_dim=48, do_layer_norm_before=True, layer_norm_elementwise_affine=False),
 "remove-final": dict(hidden_size=48, word_embed_proj_dim=48, do_layer_norm_before=True, _remove_final_layer_norm=True),
}
ids = torch.tensor([[2, 45, 99, 300, 7, 8, 9, 10], [1, 1, 1, 2, 5, 17, 250, 3]])
mask = torch.tensor([[1]*8, [0,0,0,1,1,1,1,1]])
for name, kw in variants.items():
    cfg = OPTConfig(vocab_size=320, num_hidden_layers=2, ffn_dim=96, num_attention_heads=4, max_position_embeddings=40,
                    bos_token_id=2, eos_token_id=2, pad_token_id=1, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, **kw)
    m = OPTForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in m.parameters(): p.add_(torch.randn_like(p) * 0.05)
    m.save_pretrained(name, safe_serialization=True)
    m64 = m.double()
    with torch.no_grad():
        out = m64(input_ids=ids, attention_mask=mask)
    json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist()}, open(name + "/in.json", "w"))
    save_file({"logits": out.logits.float().contiguous()}, name + "/ref.safetensors")
    print(name, "ok", m.model.decoder.project_in is not None)
