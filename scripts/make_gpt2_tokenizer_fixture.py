#!/usr/bin/env python3
"""Writes tokenizer/testdata/gpt2_hf_ids.json: the ids transformers' slow GPT2Tokenizer (the class MeZO's and FZOO's
code load OPT's tokenizer with, use_fast=False) gives for a set of texts, on GPT-2-style files made from a real
byte-level BPE. OPT's own vocab.json and merges.txt cannot be shipped here, so the files are made from the shared
Qwen3 tokenizer.json (151,643 tokens, 151,387 merges): its model.vocab and model.merges become vocab.json and
merges.txt ("#version: 0.2" header, one merge a line, a final newline), OPT's four special tokens <s>, <pad>, </s>,
<unk> are appended to the vocabulary (ids V..V+3), and tokenizer_config.json is facebook/opt-1.3b's (</s> as BOS, EOS
and UNK, <pad>, add_bos_token). tokenizer/gpt2files_test.go builds the same files and checks meazo-go's ids.

    PYTHONPATH=../shared/pylib:/tmp/gpt2tok /usr/bin/python3 scripts/make_gpt2_tokenizer_fixture.py \\
        ../shared tokenizer/testdata/gpt2_hf_ids.json

pylib (transformers 4.51, ../shared/pylib/SOURCES.md) has no models/gpt2: GPT2Tokenizer's module is taken from
huggingface/transformers (src/transformers/models/gpt2/tokenization_gpt2.py, commit
00e3c077d60be600e0e66df599ab5577d62024cd) into a scratch folder on PYTHONPATH, as `tokenization_gpt2`, with its
imports pointed at the installed transformers (`from transformers.tokenization_utils import AddedToken,
PreTrainedTokenizer`) and its vocabulary-file loading done before PreTrainedTokenizer.__init__ (as 4.51's does; the
older file calls it first). It is not committed. Needs Debian's python3-regex.

The texts: the shared tokenizer corpus (fixtures/tokenizers/ref/corpus.json), the same texts in MeZO's SST-2
template with each label word, and special tokens written inside text.
"""
import hashlib
import json
import os
import sys
import tempfile

import torch113_compat  # noqa: F401  (before transformers: see ../shared/pylib/SOURCES.md)
import transformers.tokenization_utils_base as tub
from tokenization_gpt2 import GPT2Tokenizer

# pylib's `tokenizers` is a stub, so transformers 4.51 uses its own AddedToken dataclass, which a slow tokenizer with
# AddedToken specials (GPT2Tokenizer's) cannot use: it is not hashable and has no __setstate__. The tokenizers
# library's AddedToken hashes by its content and __setstate__ sets the given fields; so does this one here.
tub.AddedToken.__hash__ = lambda self: hash(self.content)
tub.AddedToken.__setstate__ = lambda self, state: self.__dict__.update(state)

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]

# facebook/opt-1.3b's tokenizer_config.json, with the keys GPT2Tokenizer reads.
OPT_CONFIG = {
    "errors": "replace", "add_prefix_space": False, "add_bos_token": True, "model_max_length": 1000000000000000019884624838656,
    "bos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False},
    "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False},
    "unk_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False},
    "pad_token": {"__type": "AddedToken", "content": "<pad>", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False},
}

EXTRA = [
    "", " ", "a", "  two  spaces  ", "</s>", "<s>hello</s>", "x<pad>y", "line one\nline two\n\n", "tab\tsep",
    "It's 12:30, don't panic!!!", "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001F44D\U0001F3FD", "\u00a0nbsp and \u3000ideographic",
    "numbers 1234567890 and 3.14159", "CamelCaseWordsAndALLCAPS", "e\u0301 combining", "\u0663\u0664 Arabic-Indic digits",
]


def gpt2_files(tokenizer_json, out):
    """Writes vocab.json, merges.txt and tokenizer_config.json into out; returns the vocabulary's size."""
    with open(tokenizer_json, encoding="utf-8") as f:
        model = json.load(f)["model"]
    vocab = dict(model["vocab"])
    v = len(vocab)
    for i, s in enumerate(SPECIALS):
        vocab[s] = v + i
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(OPT_CONFIG, f)
    return v


def main():
    shared, out = sys.argv[1], sys.argv[2]
    source = os.path.join(shared, "fixtures", "tokenizers", "qwen3", "tokenizer.json")
    with open(os.path.join(shared, "fixtures", "tokenizers", "ref", "corpus.json"), encoding="utf-8") as f:
        corpus = [c["text"] for c in json.load(f)]
    texts = corpus + [f"{t.strip()} It was {w}" for t in corpus[:40] for w in ("terrible", "great")] + EXTRA
    with tempfile.TemporaryDirectory() as d:
        v = gpt2_files(source, d)
        tok = GPT2Tokenizer.from_pretrained(d)
        cases = [{"text": t, "ids": tok(t)["input_ids"]} for t in texts]
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    doc = {
        "made_by": "scripts/make_gpt2_tokenizer_fixture.py: transformers' slow GPT2Tokenizer, add_special_tokens=True",
        "source": "fixtures/tokenizers/qwen3/tokenizer.json", "source_sha256": digest,
        "specials": {s: v + i for i, s in enumerate(SPECIALS)}, "cases": cases,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print(f"wrote {out}: {len(cases)} texts")


if __name__ == "__main__":
    main()
