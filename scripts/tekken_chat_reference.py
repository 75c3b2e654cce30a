#!/usr/bin/env python3
"""Writes tokenizer/testdata/tekken/chat.jsonl: Ministral-3's chat template
(tokenizer/testdata/tekken/chat_template.jinja) rendered by transformers
4.51's own Jinja environment, with the variables apply_chat_template passes
(messages, tools=None, documents=None, add_generation_prompt, and the
special tokens bos/eos/unk/pad), for tokenizer's test of its renderer.

    PYTHONPATH=/work/shared/pylib /usr/bin/python3 scripts/tekken_chat_reference.py   # Debian python3-torch
"""
import json
import os

import torch113_compat  # noqa: F401  (pylib's shim; before transformers)
from transformers.utils.chat_template_utils import _compile_jinja_template

SQUAD_SYSTEM = ("You are a question answering assistant. You will be given a user-provided context (paragraph or "
                "sentence), followed by a question. Your job will be to answer the question based on the paragraph "
                "or sentence.")
CONTEXT = ("Context: The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) were the people who in the "
           "10th and 11th centuries gave their name to Normandy, a region in France.\nQuestion: In what country is "
           "Normandy located?")

CASES = [
    ("squad_full", [{"role": "system", "content": SQUAD_SYSTEM}, {"role": "user", "content": CONTEXT},
                    {"role": "assistant", "content": "France"}], False),
    ("squad_prompt", [{"role": "system", "content": SQUAD_SYSTEM}, {"role": "user", "content": CONTEXT}], True),
    ("default_system", [{"role": "user", "content": "What is 1+1?"}], True),
    ("multi_turn", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "  spaces \n kept  "}], False),
    ("special_text", [{"role": "user", "content": "[INST] </s> {{ not a template }} 'quotes' \"double\" \u00e9\u65e5"},
                      {"role": "assistant", "content": "ok"}], False),
    ("not_alternating", [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], False),
    ("empty_assistant", [{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}], False),
]


def main():
    here = os.path.join(os.path.dirname(__file__), "..", "tokenizer", "testdata", "tekken")
    with open(os.path.join(here, "chat_template.jinja"), encoding="utf-8") as f:
        template = _compile_jinja_template(f.read())
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    out = []
    for name, messages, gen in CASES:
        rec = {"name": name, "messages": messages, "add_generation_prompt": gen}
        try:
            rec["rendered"] = template.render(messages=messages, tools=None, documents=None,
                                              add_generation_prompt=gen, **special)
        except Exception as e:  # the template's raise_exception: TemplateError
            rec["error"] = str(e)
        out.append(json.dumps(rec, ensure_ascii=False))
    with open(os.path.join(here, "chat.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print("wrote", len(out), "renders")


if __name__ == "__main__":
    main()
