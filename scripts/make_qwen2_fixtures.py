#!/usr/bin/env python3
"""Makes the tiny reference fixtures under model/testdata/qwen2/ of the Llama-like layers with projection biases, the
way ../shared/fixtures/models were made (their manifest.json) and scripts/make_opt_fixtures.py makes OPT's: a tiny
random model written by HF transformers' save_pretrained, with the logits, losses, hidden states and greedy
generations HF computes for it in float32 and in exact float64, a PEFT LoRA adapter on q_proj and v_proj (biased
Linears: PEFT keeps the base bias) with its logits, and a bf16 copy of the weights.

Five models, every bias drawn non-zero:
  qwen2-tiny          Qwen2ForCausalLM as Qwen2.5-0.5B/1.5B: tied head, q/k/v biases, o_proj without, use_sliding_window
                      false with a sliding_window no shorter than max_position_embeddings (never masks).
  qwen2-tiny-untied   Qwen2ForCausalLM as Qwen2.5-7B: untied head; sliding_window 6 with use_sliding_window false, which
                      transformers 4.51's eager attention applies to every layer (the causal mask), so the window's
                      reading is checked against HF too.
  llama-bias-tiny     LlamaForCausalLM with attention_bias (q, k, v, o) and mlp_bias (gate, up, down), llama3 RoPE scaling.
  qwen3-bias-tiny     Qwen3ForCausalLM with attention_bias (q, k, v, o; Qwen3MLP has no bias), q/k norms.
  mistral-tiny        MistralForCausalLM (Mistral-7B's layers: Llama's without biases), head_dim 24 ≠ hidden/heads,
                      sliding_window 5, which the eager mask applies to every layer as Qwen2's.

transformers 4.51 of ../shared/pylib keeps no models/qwen2 nor models/mistral: their four files at the same commit
(huggingface/transformers 25b7f272347a93d6fb73cad126f6f6dc88e8ce89, as pylib/SOURCES.md's snapshot):
  src/transformers/models/{qwen2,mistral}/{__init__,configuration_*,modeling_*,modular_*}.py
are copied unmodified into scripts/ref_src/qwen2/ and scripts/ref_src/mistral/ (not committed: public code) and
imported as transformers.models.qwen2 and .mistral, the packages they belong to. From a mirror of the repository:

    for m in qwen2 mistral; do mkdir -p scripts/ref_src/$m; for f in __init__ configuration_$m modeling_$m modular_$m; do
      git --git-dir=$TF show 25b7f272347a93d6fb73cad126f6f6dc88e8ce89:src/transformers/models/$m/$f.py >scripts/ref_src/$m/$f.py
    done; done
 Run with Debian's python3 and python3-torch (1.13):

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_qwen2_fixtures.py model/testdata/qwen2

The reference tensors are those of ../shared/fixtures/models/manifest.json's reference_tensor_doc (the same names),
less hidden_states_f32, the RoPE tables and the offset positions (to keep each file well under 1 MB; the tests read
the float64 hidden states), with hidden_states_f64 flattened (the entries one after the other). Exact float64 is the
HF code with its float32 steps (RMSNorm, RoPE's angles, attention's softmax) kept in float64. manifest.json also
lists each model's named_parameters, the order full-parameter training lays the tensors out in.
"""
import os
import sys

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
import transformers.models.llama.modeling_llama as llama_mod
import transformers.models.qwen3.modeling_qwen3 as qwen3_mod
from safetensors.torch import save_file

import fixturelib
from fixturelib import make_bf16, make_lora

fixturelib.generate_on_torch113()
fixturelib.register_ref_src("qwen2")
import transformers.models.qwen2.modeling_qwen2 as qwen2_mod  # noqa: E402
from transformers.models.qwen2.configuration_qwen2 import Qwen2Config  # noqa: E402
fixturelib.register_ref_src("mistral")
import transformers.models.mistral.modeling_mistral as mistral_mod  # noqa: E402
from transformers.models.mistral.configuration_mistral import MistralConfig  # noqa: E402

SEED = 2025
LENGTHS = [16, 11, 7, 3]  # the batch: right-padded with id 0
MASKED_PROMPT = {1: 4}  # sequence 1's first 4 labels are -100
GEN_PROMPT_LENGTHS = [5, 9]
MAX_NEW = 8
PAD, BOS, EOS = 0, 1, 2
INPUTS = fixturelib.InputSet(LENGTHS, MASKED_PROMPT, GEN_PROMPT_LENGTHS, MAX_NEW, PAD, BOS)

SIZES = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, rms_norm_eps=1e-6, bos_token_id=BOS, eos_token_id=EOS, attention_dropout=0.0)
MODELS = {
    "qwen2-tiny": (Qwen2Config, qwen2_mod.Qwen2ForCausalLM, dict(
        SIZES, rope_theta=1e6, tie_word_embeddings=True, max_position_embeddings=64, use_sliding_window=False,
        sliding_window=64, max_window_layers=2)),
    "qwen2-tiny-untied": (Qwen2Config, qwen2_mod.Qwen2ForCausalLM, dict(
        SIZES, rope_theta=1e6, tie_word_embeddings=False, max_position_embeddings=64, use_sliding_window=False,
        sliding_window=6, max_window_layers=3)),
    "llama-bias-tiny": (LlamaConfig, LlamaForCausalLM, dict(
        SIZES, rope_theta=5e5, tie_word_embeddings=False, max_position_embeddings=128, attention_bias=True, mlp_bias=True,
        head_dim=16, rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 16})),
    "qwen3-bias-tiny": (Qwen3Config, Qwen3ForCausalLM, dict(
        SIZES, rope_theta=1e6, tie_word_embeddings=True, max_position_embeddings=128, attention_bias=True, head_dim=32,
        sliding_window=None, use_sliding_window=False)),
    "mistral-tiny": (MistralConfig, mistral_mod.MistralForCausalLM, dict(
        SIZES, rope_theta=1e6, tie_word_embeddings=False, max_position_embeddings=128, head_dim=24, sliding_window=5)),
}
# The models whose sliding window is shorter than the batch: the window counts the pads' slots, so a left-padded
# row is another computation.
WINDOWED = {"qwen2-tiny-untied", "mistral-tiny"}

# Weight scales: not the init_std of 0.02, which gives near-uniform attention and logits that hide masking and
# position bugs (../shared/spec/MODELS.md). Norm weights 1 + 0.25·N, projection biases 0.2·N.
SCALES = {"embed_tokens": 0.5, "q_proj": 0.25, "k_proj": 0.25, "v_proj": 0.15, "o_proj": 0.15, "gate_proj": 0.3,
          "up_proj": 0.3, "down_proj": 0.2, "lm_head": 0.2}
BIAS_SCALE = 0.2


def init_weights(model, gen):
    for name, p in model.named_parameters():
        with torch.no_grad():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.25 * noise)
            elif name.endswith("bias"):
                p.copy_(BIAS_SCALE * noise)
            else:
                p.copy_(SCALES[name.split(".")[-2]] * noise)


def exact_f64():
    """Keeps in float64, for a float64 model, the steps HF computes in float32: RMSNorm, RoPE's angles and
    attention's softmax (float32 models run HF's code unchanged)."""
    for mod, norm, rope in [(llama_mod, "LlamaRMSNorm", "LlamaRotaryEmbedding"), (qwen3_mod, "Qwen3RMSNorm", "Qwen3RotaryEmbedding"),
                            (qwen2_mod, "Qwen2RMSNorm", "Qwen2RotaryEmbedding"),
                            (mistral_mod, "MistralRMSNorm", "MistralRotaryEmbedding")]:
        n_cls, r_cls = getattr(mod, norm), getattr(mod, rope)

        def norm_fwd(self, x, _orig=n_cls.forward):
            if x.dtype != torch.float64:
                return _orig(self, x)
            return fixturelib.rms_norm_f64(self, x)

        def rope_fwd(self, x, position_ids, _orig=r_cls.forward):
            if x.dtype != torch.float64:
                return _orig(self, x, position_ids)
            return fixturelib.rope_f64(self, x, position_ids)

        n_cls.forward, r_cls.forward = norm_fwd, rope_fwd
    fixturelib.exact_f64_softmax()


def make(name, out_dir):
    """Makes the fixture of MODELS[name] from the first seed SEED + len(name) + 1000·k whose greedy steps all have a
    top-2 margin above 1e-2 (stable tokens in float32)."""
    for k in range(10):
        seed = SEED + len(name) + 1000 * k
        entry = make_seed(name, out_dir, seed)
        if entry["min_greedy_margin"] > 1e-2:
            return entry
        print(f"{name}: seed {seed}: a greedy step's top-2 margin {entry['min_greedy_margin']} is too small, next seed")
    raise SystemExit(f"{name}: no stable seed")


def make_seed(name, out_dir, seed):
    cfg_cls, model_cls, kw = MODELS[name]
    gen = torch.Generator().manual_seed(seed)
    cfg = cfg_cls(**kw, torch_dtype="float32")
    d = os.path.join(out_dir, name)
    model = fixturelib.new_model(model_cls, cfg, init_weights, gen, d)
    ref = {}
    ids, mask, labels, m64 = fixturelib.batch_references(model, model_cls, d, INPUTS, gen, ref)
    margins, prompts = INPUTS.generations(model, gen, cfg.vocab_size, ref, check_batch=name not in WINDOWED)

    names = [n for n, _ in model.named_parameters()]
    margins.append(make_lora(model, m64, d, INPUTS, ids, mask, labels, prompts, gen, ref, sort_targets=True))
    make_bf16(model_cls, d, ids, mask, labels, ref)

    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, os.path.join(d, "reference.safetensors"))
    hf32 = (ref["logits_f32"].double() - ref["logits_f64"]).abs()[mask.bool()].max().item()
    return {"name": name, "model_class": model_cls.__name__, "seed": seed, "config": kw,
            "min_greedy_margin": min(margins), "hf_f32_vs_f64_max_abs_logit_diff": hf32, "named_parameters": names}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "model/testdata/qwen2"
    os.makedirs(out, exist_ok=True)
    exact_f64()
    torch.set_num_threads(1)
    models = {}
    for name in MODELS:
        models[name] = make(name, out)
        models[name]["files"] = fixturelib.file_table(os.path.join(out, name))
    manifest = fixturelib.manifest_header("scripts/make_qwen2_fixtures.py")
    manifest.update({
        "qwen2_source": "huggingface/transformers @25b7f272347a93d6fb73cad126f6f6dc88e8ce89 (pylib's snapshot commit): "
                        "src/transformers/models/qwen2/{__init__,configuration_qwen2,modeling_qwen2,modular_qwen2}.py, unmodified",
        "mistral_source": "the same commit's src/transformers/models/mistral/{__init__,configuration_mistral,modeling_mistral,"
                          "modular_mistral}.py, unmodified",
        "layout": "as ../shared/fixtures/models/manifest.json: config.json, generation_config.json, model.safetensors "
                  "(F32, lm_head.weight omitted when tied), lora/ (PEFT, r=4, alpha=8, q_proj and v_proj, bias none: the "
                  "base Linears keep their biases), bf16/ (the weights rounded to bf16, saved by HF), reference.safetensors",
        "reference_tensors": "those of ../shared/fixtures/models/manifest.json's reference_tensor_doc, less hidden_states_f32, "
                             "the RoPE tables and offset positions; hidden_states_f64 flattened, the entries one after the "
                             "other. Float64 is exact: RMSNorm, RoPE's angles and attention's softmax kept in float64. "
                             "Inputs: right-padded with id 0, each sequence starting with id 1. qwen2-tiny-untied's "
                             "sliding_window 6 is applied by the eager mask to every layer (use_sliding_window false), "
                             "counting cache slots, pads included.",
        "set_definition": INPUTS.definition(weight_scales=SCALES, norms="weight 1 + 0.25·N(0,1)",
                                            projection_biases=f"{BIAS_SCALE}·N(0,1)", lora="A, B = 0.2·N(0,1)"),
        "models": models,
    })
    fixturelib.write_json(os.path.join(out, "manifest.json"), manifest)


if __name__ == "__main__":
    main()
