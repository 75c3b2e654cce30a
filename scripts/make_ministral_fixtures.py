#!/usr/bin/env python3
"""Makes model/testdata/ministral3: a tiny random Ministral-3 (the language model of
mistralai/Ministral-3-14B-Instruct-2512, in its Mistral3ForConditionalGeneration checkpoint layout, with two
tiny vision/projector tensors the loader must skip) and the references of transformers 5's own code.

transformers 4.51 (../shared/pylib) predates Ministral-3, so this runs transformers 5's modeling_ministral3.py
and its YaRN function on Debian's torch 1.13 with the smallest shims (below, each named): copy
  src/transformers/models/ministral3/modeling_ministral3.py  @ 00b364c707dac287e81ab6a952c386246a1025f3
  src/transformers/modeling_rope_utils.py:_compute_yarn_parameters (5.x, with `truncate`)
into scripts/ref_src/ (modeling_ministral3.py, rope_yarn.py; not committed: public code). The shims replace
only infrastructure 4.51 lacks: the config class (a 4.51 PretrainedConfig with Ministral3Config's fields),
check_model_inputs/auto_docstring (identity decorators), GradientCheckpointingLayer (nn.Module),
masking_utils.create_causal_mask (the eager additive mask: causal plus key padding, finfo.min, as 4.51's
LlamaModel builds it). The PEFT LoRA adapter (lora/) is PEFT 0.15's, made on the module tree of
Mistral3ForConditionalGeneration (Mistral3Tree below), with its float32 logits and the exact float64 logits of
the adapter merged. Run: PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/make_ministral_fixtures.py OUT_DIR
"""
import json, math, os, sys, types
import torch113_compat  # noqa: F401
import torch
from torch import nn
import transformers
from transformers import PretrainedConfig
from safetensors.torch import save_file

import fixturelib

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "ref_src")

# --- shims (infrastructure only) -------------------------------------------------------------------
import transformers.utils.generic as generic
generic.check_model_inputs = lambda *a, **k: (lambda f: f)
transformers.utils.auto_docstring = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))
transformers.utils.TransformersKwargs = dict
layers_mod = types.ModuleType("transformers.modeling_layers")
layers_mod.GradientCheckpointingLayer = nn.Module
sys.modules["transformers.modeling_layers"] = layers_mod


def create_causal_mask(config, input_embeds, attention_mask, cache_position, past_key_values, position_ids):
    b, t = input_embeds.shape[:2]
    dtype = input_embeds.dtype
    if attention_mask is None:
        attention_mask = torch.ones(b, t, dtype=torch.long)
    allowed = torch.ones(t, t, dtype=torch.bool).tril()[None, None] & attention_mask[:, None, None, :].bool()
    return torch.zeros(b, 1, t, t, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


mask_mod = types.ModuleType("transformers.masking_utils")
mask_mod.create_causal_mask = create_causal_mask
mask_mod.create_sliding_window_causal_mask = None  # the configs say sliding_window null
sys.modules["transformers.masking_utils"] = mask_mod


class Ministral3Config(PretrainedConfig):
    model_type = "ministral3"

    def __init__(self, vocab_size=131072, hidden_size=4096, intermediate_size=14336, num_hidden_layers=34,
                 num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_act="silu",
                 max_position_embeddings=262144, rms_norm_eps=1e-5, pad_token_id=11, bos_token_id=1,
                 eos_token_id=2, tie_word_embeddings=False, rope_parameters=None, sliding_window=None,
                 attention_dropout=0.0, **kw):
        self.vocab_size, self.hidden_size, self.intermediate_size = vocab_size, hidden_size, intermediate_size
        self.num_hidden_layers, self.num_attention_heads = num_hidden_layers, num_attention_heads
        self.num_key_value_heads, self.head_dim, self.hidden_act = num_key_value_heads, head_dim, hidden_act
        self.max_position_embeddings, self.rms_norm_eps = max_position_embeddings, rms_norm_eps
        self.rope_parameters, self.sliding_window, self.attention_dropout = rope_parameters, sliding_window, attention_dropout
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id,
                         tie_word_embeddings=tie_word_embeddings, **kw)
        self.standardize_rope_params()  # 5.x's PreTrainedConfig does it at init

    def standardize_rope_params(self):  # 5.x: a legacy "type" becomes "rope_type"
        if "type" in self.rope_parameters:
            self.rope_parameters["rope_type"] = self.rope_parameters.pop("type")


pkg = "transformers.models.ministral3"
cfg_mod = types.ModuleType(pkg + ".configuration_ministral3")
cfg_mod.Ministral3Config = Ministral3Config
sys.modules[pkg] = types.ModuleType(pkg)
sys.modules[pkg].__path__ = [src]
sys.modules[cfg_mod.__name__] = cfg_mod
sys.path.insert(0, src)
import rope_yarn  # noqa: E402
import transformers.modeling_rope_utils as ru  # noqa: E402
ru.ROPE_INIT_FUNCTIONS["yarn"] = rope_yarn._compute_yarn_parameters
import importlib.util  # noqa: E402
spec = importlib.util.spec_from_file_location(pkg + ".modeling_ministral3", os.path.join(src, "modeling_ministral3.py"))
M = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = M
spec.loader.exec_module(M)

# --- the tiny model --------------------------------------------------------------------------------
TEXT = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, hidden_act="silu", max_position_embeddings=128, rms_norm_eps=1e-5,
            pad_token_id=11, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, sliding_window=None,
            rope_parameters={"type": "yarn", "rope_theta": 1e9, "factor": 16.0, "original_max_position_embeddings": 8,
                             "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "llama_4_scaling_beta": 0.1})
SCALES = {"embed_tokens": 0.5, "q_proj": 0.25, "k_proj": 0.25, "v_proj": 0.15, "o_proj": 0.15, "gate_proj": 0.3,
          "up_proj": 0.3, "down_proj": 0.2, "lm_head": 0.2}


def build(seed=1234):
    torch.manual_seed(seed)
    cfg = Ministral3Config(**json.loads(json.dumps(TEXT)), attn_implementation="eager")
    cfg._attn_implementation = "eager"
    m = M.Ministral3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.25 * torch.randn_like(p))
            else:
                p.copy_(SCALES[name.split(".")[-2]] * torch.randn_like(p))
    return m


def hf_names(sd):
    out = {}
    for k, v in sd.items():
        out["lm_head.weight" if k == "lm_head.weight" else "model.language_model." + k[len("model."):]] = v.contiguous()
    g = torch.Generator().manual_seed(7)  # stand-ins for the vision tower and projector: never read
    out["model.vision_tower.ln_pre.weight"] = torch.randn(16, generator=g)
    out["model.multi_modal_projector.linear_1.weight"] = torch.randn(64, 16, generator=g)
    return out


def exact64(m):
    """The same model computing in float64 throughout (HF keeps RMSNorm, softmax and RoPE in float32)."""
    m = m.double()
    for mod in m.modules():
        if isinstance(mod, M.Ministral3RMSNorm):
            mod.forward = types.MethodType(fixturelib.rms_norm_f64, mod)
        if isinstance(mod, M.Ministral3RotaryEmbedding):
            mod.forward = types.MethodType(fixturelib.rope_f64, mod)
    real_softmax = nn.functional.softmax
    M.nn.functional.softmax = lambda x, dim, dtype=None: real_softmax(x, dim=dim, dtype=torch.float64)
    return m


def batch():
    g = torch.Generator().manual_seed(99)
    lengths, L = [16, 11, 7, 3], 16
    ids = torch.zeros(4, L, dtype=torch.long)
    mask = torch.zeros(4, L, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(3, 512, (n,), generator=g)
        ids[i, 0] = 1
        mask[i, :n] = 1
    labels = ids.masked_fill(mask == 0, -100)
    labels[1, :4] = -100
    shift = torch.cat([labels[:, 1:], torch.full((4, 1), -100)], dim=1)
    return ids, mask, labels, shift


def ce(logits, shift):
    lp = torch.log_softmax(logits.double(), -1)
    tok = torch.where(shift == -100, torch.zeros_like(lp[..., 0]), -lp.gather(-1, shift.clamp(min=0)[..., None])[..., 0])
    n = (shift != -100).sum(1)
    return tok.sum(1) / n, tok.sum() / n.sum()


def greedy(m, prompt, steps=8):
    ids = prompt[None]
    for _ in range(steps):
        nxt = m(input_ids=ids, use_cache=False).logits[0, -1].argmax()
        ids = torch.cat([ids, nxt.view(1, 1)], dim=1)
    return ids[0, len(prompt):]


class Mistral3Tree(nn.Module):
    """The module tree of transformers 5's Mistral3ForConditionalGeneration on the text path:
    model.language_model (the Ministral3Model), model.vision_tower (here a stand-in with Pixtral's
    attention projection names, never run on text) and lm_head, so that PEFT names the adapter's
    tensors as on the real checkpoint (base_model.model.model.language_model.layers.N...)."""

    def __init__(self, causal):
        super().__init__()
        self.model = nn.Module()
        self.model.language_model = causal.model
        vt = nn.Module()
        vt.transformer = nn.Module()
        att = nn.Module()
        att.q_proj, att.v_proj = nn.Linear(16, 16, bias=False), nn.Linear(16, 16, bias=False)
        layer = nn.Module()
        layer.attention = att
        vt.transformer.layers = nn.ModuleList([layer])
        self.model.vision_tower = vt
        self.lm_head = causal.lm_head

    def forward(self, input_ids, attention_mask=None):
        h = self.model.language_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
        return self.lm_head(h)


LORA = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)


def peft_adapter(sd, ids, mask, out_dir):
    """PEFT 0.15's LoRA (random A and B, init_lora_weights=False) on the Mistral3 module tree: saves it with
    save_pretrained (its vision-tower matrices included, as on the real checkpoint) and returns PEFT's
    float32 logits and the exact float64 logits of the model with the adapter merged in float64."""
    import peft
    torch.manual_seed(4321)
    m = build()
    m.load_state_dict(sd)
    tree = Mistral3Tree(m)
    pm = peft.get_peft_model(tree, peft.LoraConfig(init_lora_weights=False, **LORA))
    pm.eval()
    with torch.no_grad():
        logits32 = pm(input_ids=ids, attention_mask=mask)
    pm.save_pretrained(out_dir)
    os.remove(os.path.join(out_dir, "README.md"))  # PEFT's empty model card
    merged = {k: v.double() for k, v in sd.items()}
    scale = LORA["lora_alpha"] / LORA["r"]
    for name, mod in pm.named_modules():
        if hasattr(mod, "lora_A") and ".language_model." in name:
            a, b = mod.lora_A["default"].weight.double(), mod.lora_B["default"].weight.double()
            key = "model." + name.split(".language_model.", 1)[1] + ".weight"
            merged[key] = merged[key] + scale * (b @ a)
    m64 = exact64(build())
    m64.load_state_dict(merged)
    with torch.no_grad():
        logits64 = m64(input_ids=ids, attention_mask=mask, use_cache=False).logits
    return logits32, logits64


def main(out):
    m32 = build()
    sd = {k: v.detach().clone() for k, v in m32.state_dict().items()}
    ids, mask, labels, shift = batch()
    ref = {"input_ids": ids, "attention_mask": mask, "labels": labels, "shift_labels": shift,
           "rope_inv_freq_f32": m32.model.rotary_emb.inv_freq.clone()}
    with torch.no_grad():
        o = m32(input_ids=ids, attention_mask=mask, labels=labels, use_cache=False)
        ref["logits_f32"], ref["hf_batch_loss_f32"] = o.logits, o.loss.reshape(1)
        for i, p in enumerate([torch.tensor([1, 17, 300, 42, 5]), torch.tensor([1, 99, 8, 250, 77, 3, 480, 64, 21])]):
            ref[f"gen{i}_prompt"], ref[f"gen{i}_new_tokens"] = p, greedy(m32, p)
        mb = build()  # the bf16 checkpoint's values, run in float32 and in exact float64
        mb.load_state_dict({k: v.bfloat16().float() for k, v in sd.items()})
        ref["bf16ckpt_logits_f32"] = mb(input_ids=ids, attention_mask=mask, use_cache=False).logits
        # exact64 patches softmax for good: every float32 run is above.
        m64 = exact64(build())
        l64 = m64(input_ids=ids, attention_mask=mask, use_cache=False).logits
        ref["logits_f64"] = l64
        ref["loss_per_seq_f64"], bl = ce(l64, shift)
        ref["batch_loss_f64"] = bl.reshape(1)
        mb64 = exact64(mb)
        ref["bf16ckpt_logits_f64"] = mb64(input_ids=ids, attention_mask=mask, use_cache=False).logits
    d = os.path.join(out, "ministral3-tiny")
    os.makedirs(os.path.join(d, "bf16"), exist_ok=True)
    ref["lora_logits_f32"], ref["lora_logits_f64"] = peft_adapter(sd, ids, mask, os.path.join(d, "lora"))
    text = dict(TEXT, model_type="ministral3")
    conf = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "image_token_index": 10,
            "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
            "vision_feature_layer": -1, "text_config": text, "torch_dtype": "float32",
            "vision_config": {"model_type": "pixtral", "hidden_size": 16, "num_hidden_layers": 0}}
    for sub, dtype, conv in [("", "float32", lambda t: t.float()), ("bf16", "bfloat16", lambda t: t.bfloat16())]:
        c = dict(conf, torch_dtype=dtype)
        with open(os.path.join(d, sub, "config.json"), "w") as f:
            json.dump(c, f, indent=2, sort_keys=True)
        save_file({k: conv(v) for k, v in hf_names(sd).items()}, os.path.join(d, sub, "model.safetensors"), metadata={"format": "pt"})
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(d, "reference.safetensors"))
    print("wrote", d, "torch", torch.__version__, "transformers (infrastructure)", transformers.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
