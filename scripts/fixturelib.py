"""What the scripts that make the reference fixtures with the real HF transformers and PEFT have in common
(make_opt_fixtures.py, make_qwen2_fixtures.py, make_rope_fixtures.py, make_vit_fixtures.py,
make_ministral_fixtures.py), so that each script holds only its models and what it records of them.

Imported from scripts/ (each script's own folder is on sys.path when it runs), on Debian's python3-torch (1.13)
with ../shared/pylib on PYTHONPATH (transformers 4.51, PEFT 0.15; pylib/SOURCES.md says what it changes):

  new_model                     a tiny random model, saved by HF's save_pretrained
  InputSet                      a causal LM fixture's inputs: the right-padded batch with its labels, the same
                                batch left-padded, and greedy generations from random prompts
  shift_labels, losses, margin  the references computed from the logits, in float64
  forward_references            the float32 and exact float64 logits, hidden states and losses of the batch
  batch_references              the same, with the batch drawn and its left-padded float32 logits
  exact_f64_softmax,            HF's float32 steps kept in float64 for a float64 model
    rms_norm_f64, rope_f64
  make_lora, save_lora          a PEFT LoRA adapter with random A and B, saved as the fixtures hold it
  make_bf16                     the weights rounded to bf16 and saved by HF, with the logits of that checkpoint
  register_ref_src              a model package of transformers that pylib lacks, from scripts/ref_src/
  file_table, write_json        manifest.json: each file's size and sha256, and the JSON layout
  generate_on_torch113          lets HF's generate() run on torch 1.13

A change here reaches every fixture made with it: rerun the scripts and check that the committed fixtures come out
byte-identical (sha256), or say why they change.
"""
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import types

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def generate_on_torch113():
    """Lets HF's generate() run: transformers.generation.utils asks integrations.fsdp whether the model is
    FSDP-managed, which imports torch.distributed.fsdp, and Debian's torch 1.13 fails to import that on Python 3.11
    (SOURCES.md). One CPU process never is."""
    import transformers.generation.utils as gen_utils
    gen_utils.is_fsdp_managed_module = lambda m: False


def register_ref_src(model):
    """Makes scripts/ref_src/MODEL the package transformers.models.MODEL, for a model whose files pylib's
    transformers does not keep (copied from its commit, unmodified and not committed: make_qwen2_fixtures.py
    says how)."""
    pkg = types.ModuleType("transformers.models." + model)
    pkg.__path__ = [os.path.join(HERE, "ref_src", model)]
    sys.modules[pkg.__name__] = pkg


def new_model(model_cls, cfg, init_weights, gen, d):
    """model_cls of cfg with eager attention, in eval mode, its weights drawn by init_weights(model, gen) (the
    scales HF's init_std would give make attention near-uniform and hide masking and position bugs), saved into d
    (emptied first) by HF's save_pretrained."""
    cfg._attn_implementation = "eager"
    model = model_cls(cfg).eval()
    init_weights(model, gen)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    return model


@dataclasses.dataclass(frozen=True)
class InputSet:
    """A causal LM fixture's inputs. The batch: one sequence per entry of lengths, each starting with bos and
    followed by random ids from 3 up, right-padded with pad; the labels are the ids but at the pads and, for each
    sequence s of masked_prompt, its first masked_prompt[s] positions (-100). Generations: a random prompt per entry
    of gen_prompt_lengths, max_new greedy tokens each (no EOS stop)."""
    lengths: list
    masked_prompt: dict
    gen_prompt_lengths: list
    max_new: int
    pad: int
    bos: int

    def definition(self, **more):
        """manifest.json's set_definition: the set's fields under their manifest names, then more."""
        return dict({"lengths": self.lengths, "label_prompt_mask": self.masked_prompt,
                     "gen_prompt_lengths": self.gen_prompt_lengths, "max_new_tokens": self.max_new}, **more)

    def batch(self, gen, vocab):
        """input_ids, attention_mask and labels of the right-padded batch, drawn from gen."""
        b, L = len(self.lengths), max(self.lengths)
        ids = torch.full((b, L), self.pad, dtype=torch.long)
        mask = torch.zeros((b, L), dtype=torch.long)
        for s, n in enumerate(self.lengths):
            ids[s, 0] = self.bos
            ids[s, 1:n] = torch.randint(3, vocab, (n - 1,), generator=gen)
            mask[s, :n] = 1
        labels = ids.clone()
        labels[mask == 0] = -100
        for s, n in self.masked_prompt.items():
            labels[s, :n] = -100
        return ids, mask, labels

    def left_pad(self, ids, mask):
        """The batch left-padded, with the position_ids generate() builds for it."""
        b, L = ids.shape
        lids, lmask = torch.full_like(ids, self.pad), torch.zeros_like(mask)
        for s, n in enumerate(self.lengths):
            lids[s, L - n:] = ids[s, :n]
            lmask[s, L - n:] = 1
        pos = lmask.cumsum(-1) - 1
        pos.masked_fill_(lmask == 0, 1)  # what generate() builds
        return lids, lmask, pos

    def greedy(self, model, ids, mask=None, use_cache=True):
        """HF's greedy generate(): the max_new new tokens and each step's logits."""
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask if mask is not None else torch.ones_like(ids),
                                 do_sample=False, max_new_tokens=self.max_new, min_new_tokens=self.max_new,
                                 output_logits=True, return_dict_in_generate=True, pad_token_id=self.pad,
                                 eos_token_id=None, use_cache=use_cache)
        return out.sequences[:, ids.shape[1]:], torch.stack(out.logits, dim=1)

    def generations(self, model, gen, vocab, ref, check_batch=True):
        """Adds to ref each prompt's greedy generation (genG_prompt, genG_new_tokens, genG_step_logits_f32, checked
        to be the same without the KV cache) and the prompts' left-padded batch's (genbatch_*), checked to be the
        same tokens unless check_batch is false (a sliding window shorter than the batch counts the pads' slots).
        Returns the greedy steps' top-2 margins and the prompts."""
        margins, prompts = [], []
        for g, n in enumerate(self.gen_prompt_lengths):
            p = torch.cat([torch.tensor([[self.bos]]), torch.randint(3, vocab, (1, n - 1), generator=gen)], dim=1)
            new, steps = self.greedy(model, p)
            nocache, _ = self.greedy(model, p, use_cache=False)
            assert torch.equal(nocache, new), "generation with and without the KV cache differ"
            ref[f"gen{g}_prompt"], ref[f"gen{g}_new_tokens"], ref[f"gen{g}_step_logits_f32"] = p[0], new[0], steps[0]
            margins.append(margin(steps))
            prompts.append(p[0])
        Lp = max(len(p) for p in prompts)
        bids, bmask = torch.full((2, Lp), self.pad, dtype=torch.long), torch.zeros((2, Lp), dtype=torch.long)
        for r, p in enumerate(prompts):
            bids[r, Lp - len(p):], bmask[r, Lp - len(p):] = p, 1
        new, steps = self.greedy(model, bids, bmask)
        ref.update(genbatch_input_ids=bids, genbatch_attention_mask=bmask, genbatch_new_tokens=new)
        margins.append(margin(steps))
        if check_batch:
            for r in range(2):
                assert torch.equal(new[r], ref[f"gen{r}_new_tokens"]), "the left-padded batch generates other tokens"
        return margins, prompts


def shift_labels(labels):
    """The labels each position's logits predict: the next position's, -100 at the end."""
    out = torch.full_like(labels, -100)
    out[:, :-1] = labels[:, 1:]
    return out


def losses(logits, labels):
    """Cross-entropy in float64: per token (0 where masked), per sequence (mean over its tokens) and over the batch
    (mean over all tokens)."""
    lp = torch.log_softmax(logits.double(), dim=-1)
    shifted = shift_labels(labels)
    mask = shifted != -100
    tgt = shifted.clone()
    tgt[~mask] = 0
    ce = -lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1) * mask
    return ce, ce.sum(-1) / mask.sum(-1), ce.sum() / mask.sum()


def margin(step_logits):
    """The smallest gap between the top two logits of any greedy step: a small one makes the tokens unstable."""
    top = step_logits.double().topk(2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def flat_hidden(hidden):
    """HF's output_hidden_states, the entries flattened one after the other."""
    return torch.cat([h.flatten() for h in hidden])


def forward_references(model, m64, ids, mask, labels, ref, hidden_f32=False):
    """Adds to ref the batch's float32 logits, HF's loss, the float64 losses of those logits and the exact float64
    logits, hidden states and losses of m64 (the same weights in float64); hidden_states_f32 too if hidden_f32."""
    with torch.no_grad():
        o32 = model(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=hidden_f32)
        o64 = m64(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    ref["logits_f32"], ref["hf_batch_loss_f32"] = o32.logits, o32.loss.reshape(1)
    if hidden_f32:
        ref["hidden_states_f32"] = flat_hidden(o32.hidden_states)
    ce, per_seq, _ = losses(o32.logits, labels)
    ref["loss_per_seq_f32"], ref["token_ce_f32"] = per_seq.float(), ce.float()
    ref["logits_f64"] = o64.logits
    ref["hidden_states_f64"] = flat_hidden(o64.hidden_states)
    ce, per_seq, total = losses(o64.logits, labels)
    ref["loss_per_seq_f64"], ref["token_ce_f64"], ref["batch_loss_f64"] = per_seq, ce, total.reshape(1)


def batch_references(model, model_cls, d, inputs, gen, ref, hidden_f32=False):
    """Adds to ref the batch of inputs (drawn from gen), its forward_references with the checkpoint in d loaded in
    float64 as m64, and the float32 logits of the batch left-padded (left_*). Returns ids, mask, labels and m64."""
    ids, mask, labels = inputs.batch(gen, model.config.vocab_size)
    ref.update(input_ids=ids, attention_mask=mask, labels=labels, shift_labels=shift_labels(labels))
    m64 = model_cls.from_pretrained(d, torch_dtype=torch.float64, attn_implementation="eager").eval()
    forward_references(model, m64, ids, mask, labels, ref, hidden_f32)
    lids, lmask, lpos = inputs.left_pad(ids, mask)
    ref.update(left_input_ids=lids, left_attention_mask=lmask, left_position_ids=lpos)
    with torch.no_grad():
        ref["left_logits_f32"] = model(input_ids=lids, attention_mask=lmask, position_ids=lpos).logits
    return ids, mask, labels, m64


def exact_f64_softmax():
    """Keeps softmax in float64 for float64 inputs where HF asks for float32 (attention's); float32 inputs get HF's
    call unchanged. Patches torch.nn.functional, which the modeling files call through nn.functional."""
    orig = torch.nn.functional.softmax

    def softmax(x, dim=None, _stacklevel=3, dtype=None):
        if x.dtype == torch.float64:
            dtype = torch.float64
        return orig(x, dim=dim, dtype=dtype)

    torch.nn.functional.softmax = softmax


def rms_norm_f64(norm, x):
    """An RMSNorm module's forward (weight, variance_epsilon) computed in x's dtype, not HF's float32."""
    return norm.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon))


def rope_f64(rope, x, position_ids):
    """A rotary embedding module's forward (inv_freq, attention_scaling): cos and sin with the angles in float64,
    not HF's float32."""
    freqs = (rope.inv_freq.double()[None, :, None] @ position_ids[:, None, :].double()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * rope.attention_scaling, emb.sin() * rope.attention_scaling


def save_lora(pm, ldir, sort_targets=False):
    """Saves the PEFT model's adapter into ldir with save_pretrained, with adapter_config.json's
    base_model_name_or_path ".." (the fixture's base model is the folder above) and, if sort_targets, its
    target_modules sorted (PEFT writes a set, in the hash seed's order)."""
    os.makedirs(ldir, exist_ok=True)
    with open(os.path.join(ldir, "README.md"), "w") as f:  # PEFT writes a model card into it (no Jinja2 here)
        f.write("---\n---\n")
    pm.save_pretrained(ldir)
    os.remove(os.path.join(ldir, "README.md"))
    with open(os.path.join(ldir, "adapter_config.json")) as f:
        acfg = json.load(f)
    acfg["base_model_name_or_path"] = ".."
    if sort_targets:
        acfg["target_modules"] = sorted(acfg["target_modules"])
    with open(os.path.join(ldir, "adapter_config.json"), "w") as f:
        json.dump(acfg, f, indent=2, sort_keys=True)


def make_lora(model, m64, d, inputs, ids, mask, labels, prompts, gen, ref, sort_targets=False):
    """A PEFT LoRA adapter (r 4, alpha 8, q_proj and v_proj, A and B = 0.2·N(0,1) from gen) on model, saved into
    d/lora (save_lora), with its references added to ref: the batch's float32 logits and losses, the exact float64
    logits of the adapter loaded by PEFT onto m64, and each prompt's greedy tokens. Leaves model without the
    adapter and returns the greedy steps' smallest top-2 margin."""
    from peft import LoraConfig, PeftModel, get_peft_model
    lcfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, bias="none",
                      task_type="CAUSAL_LM", init_lora_weights=True)
    pm = get_peft_model(model, lcfg)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_" in n:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64).float())
    ldir = os.path.join(d, "lora")
    save_lora(pm, ldir, sort_targets)
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
        new, steps = inputs.greedy(pm, p.unsqueeze(0))
        ref[f"lora_gen{g}_new_tokens"] = new[0]
        margins.append(margin(steps))
    pm.unload()  # the base model without the adapter's layers
    return min(margins)


def make_bf16(model_cls, d, ids, mask, labels, ref):
    """Saves into d/bf16 the checkpoint in d loaded as bfloat16 (HF rounds the weights), and adds to ref the float32
    logits and losses of the batch on that checkpoint loaded back as float32."""
    bdir = os.path.join(d, "bf16")
    m16 = model_cls.from_pretrained(d, torch_dtype=torch.bfloat16, attn_implementation="eager")
    m16.save_pretrained(bdir, safe_serialization=True)
    mb = model_cls.from_pretrained(bdir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        o = mb(input_ids=ids, attention_mask=mask)
    ref["bf16ckpt_logits_f32"], ref["bf16ckpt_loss_per_seq_f32"] = o.logits, losses(o.logits, labels)[1].float()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def file_table(root):
    """manifest.json's files entry of a fixture folder: each file's path under root, bytes and sha256, sorted."""
    files = {}
    for dirpath, _, names in os.walk(root):
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            files[os.path.relpath(p, root)] = {"bytes": os.path.getsize(p), "sha256": sha256(p)}
    return dict(sorted(files.items()))


def manifest_header(generator):
    """The first entries of a manifest.json: the script that wrote it and the versions and settings it ran with."""
    import peft
    import transformers
    return {"generator": generator, "transformers_version": transformers.__version__,
            "peft_version": peft.__version__, "torch_version": torch.__version__, "attn_implementation": "eager",
            "device": "cpu"}


def write_json(path, obj, sort_keys=False):
    """Writes obj as the fixtures' JSON files are: indented by 2, a newline at the end."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=sort_keys)
        f.write("\n")
