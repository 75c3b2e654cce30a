#!/usr/bin/env python3
"""Makes the tiny OPT reference fixtures under model/testdata/opt/, the way ../shared/fixtures/models were made
(their manifest.json): a tiny random OPTForCausalLM of a real config's shape, written by HF transformers'
save_pretrained, with the logits, losses, hidden states and greedy generations HF computes for it, in float32
and in exact float64, a PEFT LoRA adapter and its logits, and a bf16 copy of the weights.

Two models: opt-tiny has OPT-1.3B's shape (pre-LayerNorm blocks, a final LayerNorm, word_embed_proj_dim equal to the
hidden size); opt-tiny-postnorm has OPT-350m's (LayerNorm after each residual add, no final LayerNorm, a smaller
word_embed_proj_dim with project_in/project_out).

Run with Debian's python3 and python3-torch (1.13), on the vendored transformers 4.51 and PEFT 0.15.2:

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_opt_fixtures.py model/testdata/opt

The reference tensors are those of ../shared/fixtures/models/manifest.json's reference_tensor_doc (the same names),
less the RoPE tables and the offset positions (OPT has no RoPE), hidden_states_* flattened (their last entry, after project_out,
has word_embed_proj_dim columns), plus default_left_logits_f64 (the left-padded batch
without position_ids: OPT then derives positions from the attention mask). Exact float64 means the HF code with its
one float32 step (attention's softmax, dtype=torch.float32) kept in float64.
"""
import os
import sys

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
from transformers import OPTConfig, OPTForCausalLM
from safetensors.torch import save_file

import fixturelib
from fixturelib import make_bf16, make_lora

fixturelib.generate_on_torch113()

SEED = 4323
LENGTHS = [16, 11, 7, 3]  # the batch: right-padded with OPT's pad id 1
MASKED_PROMPT = {1: 4}  # sequence 1's first 4 labels are -100
GEN_PROMPT_LENGTHS = [5, 9]
MAX_NEW = 8
PAD, BOS = 1, 2
INPUTS = fixturelib.InputSet(LENGTHS, MASKED_PROMPT, GEN_PROMPT_LENGTHS, MAX_NEW, PAD, BOS)

MODELS = {
    # OPT-1.3B's shape: pre-LayerNorm, final LayerNorm, no projections around the stack.
    "opt-tiny": dict(vocab_size=512, hidden_size=64, num_hidden_layers=3, ffn_dim=128, num_attention_heads=4,
                     max_position_embeddings=64, do_layer_norm_before=True, word_embed_proj_dim=64),
    # OPT-350m's shape: LayerNorm after each residual add, no final LayerNorm, embeddings of width 32 projected in and out.
    "opt-tiny-postnorm": dict(vocab_size=512, hidden_size=64, num_hidden_layers=3, ffn_dim=128, num_attention_heads=4,
                              max_position_embeddings=64, do_layer_norm_before=False, word_embed_proj_dim=32),
}

# Weight scales: not the init_std of 0.02, which gives near-uniform attention and logits that hide masking and
# position bugs (../shared/spec/MODELS.md). Norm weights 1 + 0.25·N, norm and projection biases 0.1·N.
SCALES = {"embed_tokens": 0.5, "embed_positions": 0.5, "project_in": 0.25, "project_out": 0.25, "q_proj": 0.25,
          "k_proj": 0.25, "v_proj": 0.15, "out_proj": 0.15, "fc1": 0.15, "fc2": 0.1}


def init_weights(model, gen):
    for name, p in model.named_parameters():
        with torch.no_grad():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
            if "layer_norm" in name:
                p.copy_(1 + 0.25 * noise if name.endswith("weight") else 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                key = name.split(".")[-2]
                p.copy_(SCALES[key] * noise)


def make(name, shape, out_dir):
    gen = torch.Generator().manual_seed(SEED + len(name))
    cfg = OPTConfig(**shape, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=PAD,
                    bos_token_id=BOS, eos_token_id=BOS, torch_dtype="float32")
    d = os.path.join(out_dir, name)
    model = fixturelib.new_model(OPTForCausalLM, cfg, init_weights, gen, d)
    ref = {}
    ids, mask, labels, m64 = fixturelib.batch_references(model, OPTForCausalLM, d, INPUTS, gen, ref, hidden_f32=True)
    with torch.no_grad():  # without position_ids: OPT derives them from the mask
        left = dict(input_ids=ref["left_input_ids"], attention_mask=ref["left_attention_mask"])
        ref["default_left_logits_f64"] = m64(**left).logits

    margins, prompts = INPUTS.generations(model, gen, cfg.vocab_size, ref)
    margins.append(make_lora(model, m64, d, INPUTS, ids, mask, labels, prompts, gen, ref))
    make_bf16(OPTForCausalLM, d, ids, mask, labels, ref)

    assert min(margins) > 1e-2, f"{name}: a greedy step's top-2 margin {min(margins)} is too small for a stable fixture"
    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, os.path.join(d, "reference.safetensors"))
    hf32 = (ref["logits_f32"].double() - ref["logits_f64"]).abs()[mask.bool()].max().item()
    return {"name": name, "model_class": "OPTForCausalLM", "seed": SEED + len(name), "config": shape,
            "min_greedy_margin": min(margins), "hf_f32_vs_f64_max_abs_logit_diff": hf32}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "model/testdata/opt"
    os.makedirs(out, exist_ok=True)
    fixturelib.exact_f64_softmax()
    torch.set_num_threads(1)
    models = {}
    for name, shape in MODELS.items():
        models[name] = make(name, shape, out)
        models[name]["files"] = fixturelib.file_table(os.path.join(out, name))
    manifest = fixturelib.manifest_header("scripts/make_opt_fixtures.py")
    manifest.update({
        "layout": "as ../shared/fixtures/models/manifest.json: config.json, generation_config.json, model.safetensors "
                  "(F32, lm_head.weight omitted: tied), lora/ (PEFT, r=4, alpha=8, q_proj and v_proj), bf16/ (the weights "
                  "rounded to bf16, saved by HF), reference.safetensors",
        "reference_tensors": "those of ../shared/fixtures/models/manifest.json's reference_tensor_doc, less the RoPE tables "
                             "and offset positions; hidden_states_* flattened, the entries one after the other (the last, after project_out, is of "
                             "width word_embed_proj_dim); plus default_left_logits_f64: the left-padded batch without "
                             "position_ids (OPT derives them from the mask: cumsum(mask)·mask − 1, + 2). Float64 is exact: "
                             "attention's softmax kept in float64. Inputs: right-padded with pad id 1, each sequence "
                             "starting with OPT's BOS </s> (2).",
        "set_definition": INPUTS.definition(weight_scales=SCALES, norms="weight 1 + 0.25·N(0,1), bias 0.1·N(0,1)",
                                            projection_biases="0.1·N(0,1)", lora="A, B = 0.2·N(0,1)"),
        "models": models,
    })
    fixturelib.write_json(os.path.join(out, "manifest.json"), manifest)


if __name__ == "__main__":
    main()
