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
import hashlib
import json
import os
import shutil
import sys

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
import transformers
import transformers.generation.utils as gen_utils
from transformers import OPTConfig, OPTForCausalLM
import peft
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import save_file

gen_utils.is_fsdp_managed_module = lambda m: False  # torch 1.13 on Python 3.11 cannot import fsdp (SOURCES.md)

SEED = 4323
LENGTHS = [16, 11, 7, 3]  # the batch: right-padded with OPT's pad id 1
MASKED_PROMPT = {1: 4}  # sequence 1's first 4 labels are -100
GEN_PROMPT_LENGTHS = [5, 9]
MAX_NEW = 8
PAD, BOS = 1, 2

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


def exact_f64_softmax():
    """Keeps attention's softmax in float64 for a float64 model (HF asks for float32)."""
    orig = torch.nn.functional.softmax

    def softmax(x, dim=None, _stacklevel=3, dtype=None):
        if x.dtype == torch.float64:
            dtype = torch.float64
        return orig(x, dim=dim, dtype=dtype)

    transformers.models.opt.modeling_opt.nn.functional.softmax = softmax


def batch(gen, vocab):
    b, L = len(LENGTHS), max(LENGTHS)
    ids = torch.full((b, L), PAD, dtype=torch.long)
    mask = torch.zeros((b, L), dtype=torch.long)
    for s, n in enumerate(LENGTHS):
        ids[s, 0] = BOS
        ids[s, 1:n] = torch.randint(3, vocab, (n - 1,), generator=gen)
        mask[s, :n] = 1
    labels = ids.clone()
    labels[mask == 0] = -100
    for s, n in MASKED_PROMPT.items():
        labels[s, :n] = -100
    return ids, mask, labels


def left_pad(ids, mask):
    b, L = ids.shape
    lids, lmask = torch.full_like(ids, PAD), torch.zeros_like(mask)
    for s, n in enumerate(LENGTHS):
        lids[s, L - n:] = ids[s, :n]
        lmask[s, L - n:] = 1
    pos = lmask.cumsum(-1) - 1
    pos.masked_fill_(lmask == 0, 1)  # what generate() builds
    return lids, lmask, pos


def flat(hidden):
    """HF's output_hidden_states, concatenated: [n_layers+1, B, L, H] but for the last entry (after the final norm and
    project_out), of width word_embed_proj_dim."""
    return torch.cat([h.flatten() for h in hidden])


def shift_labels(labels):
    out = torch.full_like(labels, -100)
    out[:, :-1] = labels[:, 1:]
    return out


def token_ce(logits, shifted):
    lp = torch.log_softmax(logits.double(), dim=-1)
    mask = shifted != -100
    tgt = shifted.clone()
    tgt[~mask] = 0
    ce = -lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * mask
    return ce, mask


def losses(logits, labels):
    ce, mask = token_ce(logits, shift_labels(labels))
    per_seq = ce.sum(-1) / mask.sum(-1)
    return ce, per_seq, ce.sum() / mask.sum()


def greedy(model, ids, mask=None):
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask if mask is not None else torch.ones_like(ids),
                             do_sample=False, max_new_tokens=MAX_NEW, min_new_tokens=MAX_NEW, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=PAD, eos_token_id=None)
    new = out.sequences[:, ids.shape[1]:]
    return new, torch.stack(out.logits, dim=1)


def margin(step_logits):
    top = step_logits.double().topk(2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def make(name, shape, out_dir):
    gen = torch.Generator().manual_seed(SEED + len(name))
    cfg = OPTConfig(**shape, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=PAD,
                    bos_token_id=BOS, eos_token_id=BOS, torch_dtype="float32")
    cfg._attn_implementation = "eager"
    model = OPTForCausalLM(cfg).eval()
    init_weights(model, gen)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    ref = {}
    ids, mask, labels = batch(gen, cfg.vocab_size)
    ref.update(input_ids=ids, attention_mask=mask, labels=labels, shift_labels=shift_labels(labels))

    m64 = OPTForCausalLM.from_pretrained(d, torch_dtype=torch.float64, attn_implementation="eager").eval()
    with torch.no_grad():
        o32 = model(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=True)
        o64 = m64(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    ref["logits_f32"] = o32.logits
    ref["hf_batch_loss_f32"] = o32.loss.reshape(1)
    ref["hidden_states_f32"] = flat(o32.hidden_states)
    ce, per_seq, _ = losses(o32.logits, labels)
    ref["loss_per_seq_f32"], ref["token_ce_f32"] = per_seq.float(), ce.float()
    ref["logits_f64"] = o64.logits
    ref["hidden_states_f64"] = flat(o64.hidden_states)
    ce, per_seq, total = losses(o64.logits, labels)
    ref["loss_per_seq_f64"], ref["token_ce_f64"], ref["batch_loss_f64"] = per_seq, ce, total.reshape(1)

    lids, lmask, lpos = left_pad(ids, mask)
    ref.update(left_input_ids=lids, left_attention_mask=lmask, left_position_ids=lpos)
    with torch.no_grad():
        ref["left_logits_f32"] = model(input_ids=lids, attention_mask=lmask, position_ids=lpos).logits
        ref["default_left_logits_f64"] = m64(input_ids=lids, attention_mask=lmask).logits

    margins = []
    prompts = []
    for g, n in enumerate(GEN_PROMPT_LENGTHS):
        p = torch.cat([torch.tensor([[BOS]]), torch.randint(3, cfg.vocab_size, (1, n - 1), generator=gen)], dim=1)
        new, steps = greedy(model, p)
        with torch.no_grad():  # the KV cache changes nothing
            nocache = model.generate(input_ids=p, attention_mask=torch.ones_like(p), do_sample=False, max_new_tokens=MAX_NEW,
                                     min_new_tokens=MAX_NEW, use_cache=False, pad_token_id=PAD, eos_token_id=None)
        assert torch.equal(nocache[:, p.shape[1]:], new), "generation with and without the KV cache differ"
        ref[f"gen{g}_prompt"], ref[f"gen{g}_new_tokens"], ref[f"gen{g}_step_logits_f32"] = p[0], new[0], steps[0]
        margins.append(margin(steps))
        prompts.append(p[0])
    Lp = max(len(p) for p in prompts)
    bids, bmask = torch.full((2, Lp), PAD, dtype=torch.long), torch.zeros((2, Lp), dtype=torch.long)
    for r, p in enumerate(prompts):
        bids[r, Lp - len(p):], bmask[r, Lp - len(p):] = p, 1
    new, steps = greedy(model, bids, bmask)
    ref.update(genbatch_input_ids=bids, genbatch_attention_mask=bmask, genbatch_new_tokens=new)
    margins.append(margin(steps))
    for r in range(2):
        assert torch.equal(new[r], ref[f"gen{r}_new_tokens"]), "the left-padded batch generates other tokens"

    lora_margin = make_lora(model, m64, d, ids, mask, labels, prompts, gen, ref)
    margins.append(lora_margin)
    make_bf16(model, d, ids, mask, labels, ref)

    assert min(margins) > 1e-2, f"{name}: a greedy step's top-2 margin {min(margins)} is too small for a stable fixture"
    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, os.path.join(d, "reference.safetensors"))
    hf32 = (ref["logits_f32"].double() - ref["logits_f64"]).abs()[mask.bool()].max().item()
    return {"name": name, "model_class": "OPTForCausalLM", "seed": SEED + len(name), "config": shape,
            "min_greedy_margin": min(margins), "hf_f32_vs_f64_max_abs_logit_diff": hf32}


def make_lora(model, m64, d, ids, mask, labels, prompts, gen, ref):
    lcfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, bias="none",
                      task_type="CAUSAL_LM", init_lora_weights=True)
    pm = get_peft_model(model, lcfg)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_" in n:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
    ldir = os.path.join(d, "lora")
    os.makedirs(ldir, exist_ok=True)
    with open(os.path.join(ldir, "README.md"), "w") as f:  # PEFT writes a model card into it (no Jinja2 here)
        f.write("---\n---\n")
    pm.save_pretrained(ldir)
    os.remove(os.path.join(ldir, "README.md"))
    with open(os.path.join(ldir, "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = ".."
    with open(os.path.join(ldir, "adapter_config.json"), "w") as f:
        json.dump(acfg, f, indent=2, sort_keys=True)
    pm.eval()
    with torch.no_grad():
        o = pm(input_ids=ids, attention_mask=mask, labels=labels)
    ref["lora_logits_f32"], ref["lora_hf_batch_loss_f32"] = o.logits, o.loss.reshape(1)
    ref["lora_loss_per_seq_f32"] = losses(o.logits, labels)[1].float()
    p64 = PeftModel.from_pretrained(m64, ldir).double().eval()
    with torch.no_grad():
        o64 = p64(input_ids=ids, attention_mask=mask)
    ref["lora_logits_f64"], ref["lora_loss_per_seq_f64"] = o64.logits, losses(o64.logits, labels)[1]
    margins = []
    for g, p in enumerate(prompts):
        new, steps = greedy(pm, p.unsqueeze(0))
        ref[f"lora_gen{g}_new_tokens"] = new[0]
        margins.append(margin(steps))
    pm.unload()  # the base model without the adapter's layers
    return min(margins)


def make_bf16(model, d, ids, mask, labels, ref):
    bdir = os.path.join(d, "bf16")
    m16 = OPTForCausalLM.from_pretrained(d, torch_dtype=torch.bfloat16, attn_implementation="eager")
    m16.save_pretrained(bdir, safe_serialization=True)
    mb = OPTForCausalLM.from_pretrained(bdir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        o = mb(input_ids=ids, attention_mask=mask)
    ref["bf16ckpt_logits_f32"], ref["bf16ckpt_loss_per_seq_f32"] = o.logits, losses(o.logits, labels)[1].float()


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "model/testdata/opt"
    os.makedirs(out, exist_ok=True)
    exact_f64_softmax()
    torch.set_num_threads(1)
    models = {}
    for name, shape in MODELS.items():
        models[name] = make(name, shape, out)
        files = {}
        root = os.path.join(out, name)
        for dirpath, _, names in os.walk(root):
            for n in sorted(names):
                p = os.path.join(dirpath, n)
                files[os.path.relpath(p, root)] = {"bytes": os.path.getsize(p), "sha256": sha(p)}
        models[name]["files"] = dict(sorted(files.items()))
    manifest = {
        "generator": "scripts/make_opt_fixtures.py",
        "transformers_version": transformers.__version__, "peft_version": peft.__version__,
        "torch_version": torch.__version__, "attn_implementation": "eager", "device": "cpu",
        "layout": "as ../shared/fixtures/models/manifest.json: config.json, generation_config.json, model.safetensors "
                  "(F32, lm_head.weight omitted: tied), lora/ (PEFT, r=4, alpha=8, q_proj and v_proj), bf16/ (the weights "
                  "rounded to bf16, saved by HF), reference.safetensors",
        "reference_tensors": "those of ../shared/fixtures/models/manifest.json's reference_tensor_doc, less the RoPE tables "
                             "and offset positions; hidden_states_* flattened, the entries one after the other (the last, after project_out, is of "
                             "width word_embed_proj_dim); plus default_left_logits_f64: the left-padded batch without "
                             "position_ids (OPT derives them from the mask: cumsum(mask)·mask − 1, + 2). Float64 is exact: "
                             "attention's softmax kept in float64. Inputs: right-padded with pad id 1, each sequence "
                             "starting with OPT's BOS </s> (2).",
        "set_definition": {"lengths": LENGTHS, "label_prompt_mask": MASKED_PROMPT, "gen_prompt_lengths": GEN_PROMPT_LENGTHS,
                           "max_new_tokens": MAX_NEW, "weight_scales": SCALES,
                           "norms": "weight 1 + 0.25·N(0,1), bias 0.1·N(0,1)", "projection_biases": "0.1·N(0,1)",
                           "lora": "A, B = 0.2·N(0,1)"},
        "models": models,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
