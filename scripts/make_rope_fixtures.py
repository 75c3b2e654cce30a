#!/usr/bin/env python3
"""Makes model/testdata/rope/: tiny random models of the Llama-like families with the RoPE scalings transformers
4.51 applies from a config's rope_scaling (modeling_rope_utils.ROPE_INIT_FUNCTIONS), written by HF's save_pretrained,
with the logits HF computes for a right-padded batch in float32 and in exact float64 (RMSNorm, RoPE's angles and
attention's softmax kept in float64, as scripts/make_qwen2_fixtures.py does, whose helpers this imports):

  llama-linear        LlamaForCausalLM, rope_scaling {"rope_type": "linear", "factor": 4}
  llama-yarn          LlamaForCausalLM, yarn with factor 2, beta_fast 16, mscale 0.8, mscale_all_dim 0.6, no
                      original_max_position_embeddings (the original is max_position_embeddings)
  qwen2-yarn          Qwen2ForCausalLM, Qwen2.5's long-context block {"type": "yarn", "factor": 4,
                      "original_max_position_embeddings": 8}: 4.51 then takes the factor as max_position_embeddings
                      (64) / 8 = 8, not the 4 the block says

Run with Debian's python3-torch (1.13) and scripts/ref_src/ as make_qwen2_fixtures.py says:

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_rope_fixtures.py model/testdata/rope
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qwen2_fixtures as q  # noqa: E402  (imports torch113_compat, transformers and the Qwen2 files)
import fixturelib  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, rms_norm_eps=1e-6, bos_token_id=q.BOS, eos_token_id=q.EOS, attention_dropout=0.0,
             max_position_embeddings=64, tie_word_embeddings=False)
MODELS = {
    "llama-linear": (LlamaConfig, LlamaForCausalLM, dict(
        SIZES, rope_theta=1e4, rope_scaling={"rope_type": "linear", "factor": 4.0})),
    "llama-yarn": (LlamaConfig, LlamaForCausalLM, dict(
        SIZES, rope_theta=1e4, rope_scaling={"rope_type": "yarn", "factor": 2.0, "beta_fast": 16.0,
                                             "mscale": 0.8, "mscale_all_dim": 0.6})),
    "qwen2-yarn": (q.Qwen2Config, q.qwen2_mod.Qwen2ForCausalLM, dict(
        SIZES, rope_theta=1e6, use_sliding_window=False, sliding_window=None,
        rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8})),
}


def make(name, out_dir):
    cfg_cls, model_cls, kw = MODELS[name]
    gen = torch.Generator().manual_seed(q.SEED + len(name))
    cfg = cfg_cls(**kw, torch_dtype="float32")
    d = os.path.join(out_dir, name)
    model = fixturelib.new_model(model_cls, cfg, q.init_weights, gen, d)
    os.remove(os.path.join(d, "generation_config.json"))
    ids, mask, _ = q.INPUTS.batch(gen, cfg.vocab_size)
    m64 = model_cls.from_pretrained(d, torch_dtype=torch.float64, attn_implementation="eager").eval()
    with torch.no_grad():
        l32 = model(input_ids=ids, attention_mask=mask).logits
        l64 = m64(input_ids=ids, attention_mask=mask).logits
    rope = model.model.rotary_emb
    ref = {"input_ids": ids, "attention_mask": mask, "logits_f32": l32, "logits_f64": l64,
           "inv_freq": rope.inv_freq.float().contiguous(),
           "attention_scaling": torch.tensor([float(rope.attention_scaling)], dtype=torch.float64)}
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(d, "reference.safetensors"))
    hf32 = (l32.double() - l64).abs()[mask.bool()].max().item()
    return {"model_class": model_cls.__name__, "config": kw, "hf_f32_vs_f64_max_abs_logit_diff": hf32,
            "rope_type": rope.rope_type, "attention_scaling": float(rope.attention_scaling)}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "model/testdata/rope"
    os.makedirs(out, exist_ok=True)
    q.exact_f64()
    torch.set_num_threads(1)
    models = {name: make(name, out) for name in MODELS}
    manifest = {"generator": "scripts/make_rope_fixtures.py", "transformers_version": transformers.__version__,
                "torch_version": torch.__version__, "attn_implementation": "eager",
                "reference_tensors": "input_ids and attention_mask (right-padded, lengths " + str(q.LENGTHS) +
                                     "), logits_f32 and exact logits_f64, the rotary embedding's inv_freq and "
                                     "attention_scaling as HF computed them",
                "models": models}
    fixturelib.write_json(os.path.join(out, "manifest.json"), manifest, sort_keys=True)


if __name__ == "__main__":
    main()
