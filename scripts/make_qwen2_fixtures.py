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
import hashlib
import json
import os
import shutil
import sys
import types

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch
import transformers
import transformers.generation.utils as gen_utils
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
import transformers.models.llama.modeling_llama as llama_mod
import transformers.models.qwen3.modeling_qwen3 as qwen3_mod
import peft
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import save_file

gen_utils.is_fsdp_managed_module = lambda m: False  # torch 1.13 on Python 3.11 cannot import fsdp (SOURCES.md)

here = os.path.dirname(os.path.abspath(__file__))
qwen2_pkg = types.ModuleType("transformers.models.qwen2")
qwen2_pkg.__path__ = [os.path.join(here, "ref_src", "qwen2")]
sys.modules["transformers.models.qwen2"] = qwen2_pkg
import transformers.models.qwen2.modeling_qwen2 as qwen2_mod  # noqa: E402
from transformers.models.qwen2.configuration_qwen2 import Qwen2Config  # noqa: E402
mistral_pkg = types.ModuleType("transformers.models.mistral")
mistral_pkg.__path__ = [os.path.join(here, "ref_src", "mistral")]
sys.modules["transformers.models.mistral"] = mistral_pkg
import transformers.models.mistral.modeling_mistral as mistral_mod  # noqa: E402
from transformers.models.mistral.configuration_mistral import MistralConfig  # noqa: E402

SEED = 2025
LENGTHS = [16, 11, 7, 3]  # the batch: right-padded with id 0
MASKED_PROMPT = {1: 4}  # sequence 1's first 4 labels are -100
GEN_PROMPT_LENGTHS = [5, 9]
MAX_NEW = 8
PAD, BOS, EOS = 0, 1, 2

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
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

        def rope_fwd(self, x, position_ids, _orig=r_cls.forward):
            if x.dtype != torch.float64:
                return _orig(self, x, position_ids)
            freqs = (self.inv_freq.double()[None, :, None] @ position_ids[:, None, :].double()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling

        n_cls.forward, r_cls.forward = norm_fwd, rope_fwd
    orig = torch.nn.functional.softmax

    def softmax(x, dim=None, _stacklevel=3, dtype=None):
        if x.dtype == torch.float64:
            dtype = torch.float64
        return orig(x, dim=dim, dtype=dtype)

    torch.nn.functional.softmax = softmax


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


def shift_labels(labels):
    out = torch.full_like(labels, -100)
    out[:, :-1] = labels[:, 1:]
    return out


def losses(logits, labels):
    lp = torch.log_softmax(logits.double(), dim=-1)
    shifted = shift_labels(labels)
    mask = shifted != -100
    tgt = shifted.clone()
    tgt[~mask] = 0
    ce = -lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * mask
    return ce, ce.sum(-1) / mask.sum(-1), ce.sum() / mask.sum()


def greedy(model, ids, mask=None, use_cache=True):
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask if mask is not None else torch.ones_like(ids),
                             do_sample=False, max_new_tokens=MAX_NEW, min_new_tokens=MAX_NEW, output_logits=True,
                             return_dict_in_generate=True, pad_token_id=PAD, eos_token_id=None, use_cache=use_cache)
    return out.sequences[:, ids.shape[1]:], torch.stack(out.logits, dim=1)


def margin(step_logits):
    top = step_logits.double().topk(2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


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
    cfg._attn_implementation = "eager"
    model = model_cls(cfg).eval()
    init_weights(model, gen)
    d = os.path.join(out_dir, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    ref = {}
    ids, mask, labels = batch(gen, cfg.vocab_size)
    ref.update(input_ids=ids, attention_mask=mask, labels=labels, shift_labels=shift_labels(labels))

    m64 = model_cls.from_pretrained(d, torch_dtype=torch.float64, attn_implementation="eager").eval()
    with torch.no_grad():
        o32 = model(input_ids=ids, attention_mask=mask, labels=labels)
        o64 = m64(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    ref["logits_f32"], ref["hf_batch_loss_f32"] = o32.logits, o32.loss.reshape(1)
    ce, per_seq, _ = losses(o32.logits, labels)
    ref["loss_per_seq_f32"], ref["token_ce_f32"] = per_seq.float(), ce.float()
    ref["logits_f64"] = o64.logits
    ref["hidden_states_f64"] = torch.cat([h.flatten() for h in o64.hidden_states])
    ce, per_seq, total = losses(o64.logits, labels)
    ref["loss_per_seq_f64"], ref["token_ce_f64"], ref["batch_loss_f64"] = per_seq, ce, total.reshape(1)

    lids, lmask, lpos = left_pad(ids, mask)
    ref.update(left_input_ids=lids, left_attention_mask=lmask, left_position_ids=lpos)
    with torch.no_grad():
        ref["left_logits_f32"] = model(input_ids=lids, attention_mask=lmask, position_ids=lpos).logits

    margins, prompts = [], []
    for g, n in enumerate(GEN_PROMPT_LENGTHS):
        p = torch.cat([torch.tensor([[BOS]]), torch.randint(3, cfg.vocab_size, (1, n - 1), generator=gen)], dim=1)
        new, steps = greedy(model, p)
        nocache, _ = greedy(model, p, use_cache=False)
        assert torch.equal(nocache, new), "generation with and without the KV cache differ"
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
    if name not in WINDOWED:
        for r in range(2):
            assert torch.equal(new[r], ref[f"gen{r}_new_tokens"]), "the left-padded batch generates other tokens"

    names = [n for n, _ in model.named_parameters()]
    margins.append(make_lora(model, m64, d, ids, mask, labels, prompts, gen, ref))
    make_bf16(model_cls, d, ids, mask, labels, ref)

    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, os.path.join(d, "reference.safetensors"))
    hf32 = (ref["logits_f32"].double() - ref["logits_f64"]).abs()[mask.bool()].max().item()
    return {"name": name, "model_class": model_cls.__name__, "seed": seed, "config": kw,
            "min_greedy_margin": min(margins), "hf_f32_vs_f64_max_abs_logit_diff": hf32, "named_parameters": names}


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
    with open(os.path.join(ldir, "README.md"), "w") as f:  # PEFT writes a model card into it (SOURCES.md)
        f.write("---\n---\n")
    pm.save_pretrained(ldir)
    os.remove(os.path.join(ldir, "README.md"))
    with open(os.path.join(ldir, "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = ".."
    acfg["target_modules"] = sorted(acfg["target_modules"])  # PEFT writes a set, in the hash seed's order
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


def make_bf16(model_cls, d, ids, mask, labels, ref):
    bdir = os.path.join(d, "bf16")
    m16 = model_cls.from_pretrained(d, torch_dtype=torch.bfloat16, attn_implementation="eager")
    m16.save_pretrained(bdir, safe_serialization=True)
    mb = model_cls.from_pretrained(bdir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        o = mb(input_ids=ids, attention_mask=mask)
    ref["bf16ckpt_logits_f32"], ref["bf16ckpt_loss_per_seq_f32"] = o.logits, losses(o.logits, labels)[1].float()


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "model/testdata/qwen2"
    os.makedirs(out, exist_ok=True)
    exact_f64()
    torch.set_num_threads(1)
    models = {}
    for name in MODELS:
        models[name] = make(name, out)
        files = {}
        root = os.path.join(out, name)
        for dirpath, _, names in os.walk(root):
            for n in sorted(names):
                p = os.path.join(dirpath, n)
                files[os.path.relpath(p, root)] = {"bytes": os.path.getsize(p), "sha256": sha(p)}
        models[name]["files"] = dict(sorted(files.items()))
    manifest = {
        "generator": "scripts/make_qwen2_fixtures.py",
        "transformers_version": transformers.__version__, "peft_version": peft.__version__,
        "torch_version": torch.__version__, "attn_implementation": "eager", "device": "cpu",
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
        "set_definition": {"lengths": LENGTHS, "label_prompt_mask": MASKED_PROMPT, "gen_prompt_lengths": GEN_PROMPT_LENGTHS,
                           "max_new_tokens": MAX_NEW, "weight_scales": SCALES, "norms": "weight 1 + 0.25·N(0,1)",
                           "projection_biases": f"{BIAS_SCALE}·N(0,1)", "lora": "A, B = 0.2·N(0,1)"},
        "models": models,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
