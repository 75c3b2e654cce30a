"""Writes qwen3-tiny/: Qwen3's tokenizer cut down to a test-sized one.

It keeps Qwen3's normalizer, pre-tokenizer, decoder, chat template and
tokenizer_config.json settings, the 256 byte tokens and the first MERGES
merges (whose results are the next ids, as in the real vocabulary), and the
special tokens the chat template writes, renumbered after the vocabulary.
So it encodes and renders chats as Qwen3 does, in fewer, shorter tokens.

    python3 tokenizer/testdata/make_qwen3_tiny.py $MEAZO_SHARED/fixtures/tokenizers/qwen3
"""
import json
import os
import sys

MERGES = 512
KEEP = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

src = sys.argv[1]
dst = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qwen3-tiny")
with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
    tok = json.load(f)
model = tok["model"]
by_id = {i: t for t, i in model["vocab"].items()}
vocab = {by_id[i]: i for i in range(256 + MERGES)}
merges = model["merges"][:MERGES]
for a, b in merges:  # every merge joins two kept tokens into a kept one
    assert a in vocab and b in vocab and a + b in vocab, (a, b)
model["vocab"], model["merges"] = vocab, merges
added = {t["content"]: t for t in tok["added_tokens"]}
tok["added_tokens"] = [dict(added[c], id=len(vocab) + k) for k, c in enumerate(KEEP)]
os.makedirs(dst, exist_ok=True)
with open(os.path.join(dst, "tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(tok, f, ensure_ascii=False, indent=1)
    f.write("\n")

with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
    cfg = json.load(f)
cfg["added_tokens_decoder"] = {str(t["id"]): {k: v for k, v in t.items() if k not in ("id", "content")} | {"content": t["content"]}
                               for t in tok["added_tokens"]}
cfg["additional_special_tokens"] = ["<|im_start|>", "<|im_end|>"]
cfg.pop("chat_template", None)  # chat_template.jinja holds it
with open(os.path.join(dst, "tokenizer_config.json"), "w", encoding="utf-8") as f:
    json.dump(cfg, f, ensure_ascii=False, indent=1)
    f.write("\n")

with open(os.path.join(src, "chat_template.jinja"), encoding="utf-8") as f:
    template = f.read()
with open(os.path.join(dst, "chat_template.jinja"), "w", encoding="utf-8") as f:
    f.write(template)
