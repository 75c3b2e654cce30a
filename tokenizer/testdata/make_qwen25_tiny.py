"""Writes qwen25-tiny/: a test-sized tokenizer in the layout of Qwen2.5-Instruct's files.

Qwen2.5's tokenizer.json is Qwen3's byte-level BPE (the same vocabulary, merges, NFC normalizer, pre-tokenizer and
decoder; Qwen3 only adds <tool_response>, </tool_response>, <think> and </think> after Qwen2.5's 22 added tokens).
This cuts the shared Qwen3 tokenizer.json down as make_qwen3_tiny.py does (the 256 byte tokens and the first MERGES
merges) and writes it as Qwen2.5's files are laid out: merges as "a b" strings, no "ignore_merges" key, and the chat
template inline in tokenizer_config.json (no chat_template.jinja), which holds Qwen2.5-Instruct's settings (eos
<|im_end|>, pad <|endoftext|>, no BOS). The added tokens kept, renumbered after the vocabulary, are the special ones
the template writes and Qwen2.5's non-special <tool_call> and </tool_call>. The template is
../qwen2.5-instruct.chat_template.jinja, Qwen2.5-Instruct's chat_template (tokenizer/README or docs/MODELS.md say
where it was taken from).

    python3 tokenizer/testdata/make_qwen25_tiny.py $MEAZO_SHARED/fixtures/tokenizers/qwen3
"""
import json
import os
import sys

MERGES = 512
KEEP = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

src = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
dst = os.path.join(here, "qwen25-tiny")
with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
    tok = json.load(f)
model = tok["model"]
by_id = {i: t for t, i in model["vocab"].items()}
vocab = {by_id[i]: i for i in range(256 + MERGES)}
merges = model["merges"][:MERGES]
for a, b in merges:  # every merge joins two kept tokens into a kept one
    assert a in vocab and b in vocab and a + b in vocab, (a, b)
model["vocab"], model["merges"] = vocab, [a + " " + b for a, b in merges]
model.pop("ignore_merges", None)
added = {t["content"]: t for t in tok["added_tokens"]}
tok["added_tokens"] = [dict(added[c], id=len(vocab) + k) for k, c in enumerate(KEEP)]
os.makedirs(dst, exist_ok=True)
with open(os.path.join(dst, "tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(tok, f, ensure_ascii=False, indent=1)
    f.write("\n")

with open(os.path.join(here, "qwen2.5-instruct.chat_template.jinja"), encoding="utf-8") as f:
    template = f.read()
cfg = {
    "add_bos_token": False, "add_prefix_space": False,
    "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k not in ("id",)} for t in tok["added_tokens"]},
    "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
    "bos_token": None, "chat_template": template, "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
    "errors": "replace", "model_max_length": 131072, "pad_token": "<|endoftext|>", "split_special_tokens": False,
    "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
}
with open(os.path.join(dst, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump(cfg, f, ensure_ascii=False, indent=2)
    f.write("\n")
