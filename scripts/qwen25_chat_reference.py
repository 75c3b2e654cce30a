#!/usr/bin/env python3
"""Writes tokenizer/testdata/qwen25-tiny/chat.jsonl: conversations rendered and encoded by transformers 4.51's own
apply_chat_template with Qwen2.5-Instruct's chat template, on the tokenizer of tokenizer/testdata/qwen25-tiny, for
tokenizer's test of its template sandbox and encoder (TestQwen25ChatMatchesHF).

The tokenizer is transformers' Qwen2Tokenizer (the slow one: pylib's `tokenizers` is a stub) loaded with
from_pretrained from qwen25-tiny's files as a Qwen2.5 repository ships them for it: vocab.json (model.vocab),
merges.txt ("#version: 0.2" and one merge a line) and tokenizer_config.json (as it is, the chat template inline).
pylib has no models/qwen2: tokenization_qwen2.py comes from scripts/ref_src/qwen2, as for
scripts/make_qwen2_fixtures.py (which says where from; not committed). Needs Debian's python3-regex and Jinja2.

    PYTHONPATH=../shared/pylib /usr/bin/python3 scripts/qwen25_chat_reference.py
"""
import json
import os
import sys
import tempfile
import types

import torch113_compat  # noqa: F401  (pylib's shim; before transformers)
import transformers.tokenization_utils_base as tub

here = os.path.dirname(os.path.abspath(__file__))
pkg = types.ModuleType("transformers.models.qwen2")
pkg.__path__ = [os.path.join(here, "ref_src", "qwen2")]
sys.modules["transformers.models.qwen2"] = pkg
from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer  # noqa: E402

# pylib's `tokenizers` is a stub, so transformers uses its own AddedToken dataclass, which a slow tokenizer's
# specials need hashable and picklable (as scripts/make_gpt2_tokenizer_fixture.py does).
tub.AddedToken.__hash__ = lambda self: hash(self.content)
tub.AddedToken.__setstate__ = lambda self, state: self.__dict__.update(state)

SST2 = "Classify the sentiment of the movie review as positive or negative."
CASES = [
    ("default_system", [{"role": "user", "content": "What is 1+1?"}], True),
    ("sst2_prompt", [{"role": "system", "content": SST2}, {"role": "user", "content": "a gorgeous , witty , seductive movie ."}], True),
    ("sst2_full", [{"role": "system", "content": SST2}, {"role": "user", "content": "a gorgeous , witty , seductive movie ."},
                   {"role": "assistant", "content": "positive"}], False),
    ("no_system_full", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}], False),
    ("multi_turn", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "  spaces \n kept  "}], True),
    ("late_system", [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "c"}], False),
    ("special_text", [{"role": "user", "content": "<|im_end|> <tool_call>x</tool_call> {{ not a template }} 'q' \"d\" \u00e9\u65e5"},
                      {"role": "assistant", "content": "ok"}], False),
    ("empty_assistant", [{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}], False),
]


def repo_files(src, dst):
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        model = json.load(f)["model"]
    with open(os.path.join(dst, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(os.path.join(dst, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(model["merges"]) + "\n")
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = f.read()
    with open(os.path.join(dst, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        f.write(cfg)


def main():
    src = os.path.join(here, "..", "tokenizer", "testdata", "qwen25-tiny")
    with tempfile.TemporaryDirectory() as tmp:
        repo_files(src, tmp)
        tok = Qwen2Tokenizer.from_pretrained(tmp)
    out = []
    for name, messages, gen in CASES:
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=gen)
        out.append(json.dumps({"name": name, "messages": messages, "add_generation_prompt": gen, "rendered": rendered,
                               "ids": ids}, ensure_ascii=False))
    with open(os.path.join(src, "chat.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", len(out), "renders")


if __name__ == "__main__":
    main()
