#!/usr/bin/env python3
"""Writes tokenizer/testdata/tekken/tokenizer.json: a small tokenizer in the
layout of Ministral-3's (Mistral's tekken BPE as HF stores it), for checking
tokenizer/ against HF's tokenizers library (scripts/tekken_reference.js).

The layout is that of the checkpoint's tokenizer.json as transformers'
MistralConverter (integrations/mistral.py) and the GGUF-to-tokenizer.json
reconstruction of the official Ministral-3 GGUF write it: no normalizer;
Split on tekken's regex (Isolated) then ByteLevel without its own regex; BPE
with ignore_merges, no byte fallback; the first 1000 ids are special added
tokens (<unk> 0, <s> 1, </s> 2, [INST] 3, [/INST] 4, <pad> 11,
[SYSTEM_PROMPT] 17, [/SYSTEM_PROMPT] 18, ...); a TemplateProcessing that
prepends <s>. The vocabulary is small and learned here from a few sentences
(the real one has 130,072 BPE entries): what is checked is the pipeline, not
the real vocabulary.

    python3 scripts/make_tekken_fixture.py   # deterministic, no network
"""
import collections
import json
import os

TEKKEN_REGEX = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
                r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

NAMED = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
         "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
         "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"]
N_SPECIAL = 1000

CORPUS = """Extract answer from passage only using exact text span answering the question precisely and concisely.
The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in France.
Super Bowl 50 was an American football game to determine the champion of the National Football League (NFL).
What is the name of the region? It's called Normandy; they'd say so. Don't, won't, I'm, we've, you'll.
McDonald's HTTPServer iPhone XMLHttpRequest ÉCOLE École naïve café Straße ǅemal ﬁne ＡＢＣ
Ελληνικά Русский текст 日本語のテキスト 中文 한국어 עברית العربية हिन्दी ไทย
path/to/file.txt https://example.com/a/b?c=d&e=f 3.14159 1,234,567 2024-10-01
"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def words(text):
    """Rough word pieces to learn merges from (the learned vocabulary only
    has to be plausible; the split that matters is the tokenizer's)."""
    import re
    return re.findall(r" ?\w+| ?[^\w\s]+|\s+", text)


def main():
    enc = bytes_to_unicode()
    counts = collections.Counter("".join(enc[b] for b in w.encode()) for w in words(CORPUS))
    seqs = {w: list(w) for w in counts}
    vocab = [enc[b] for b in range(256)]
    merges = []
    for _ in range(400):
        pairs = collections.Counter()
        for w, c in counts.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if n < 1:
            break
        merges.append([a, b])
        vocab.append(a + b)
        for w in seqs:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    specials = NAMED + ["<SPECIAL_%d>" % i for i in range(len(NAMED), N_SPECIAL)]
    ids = {tok: i for i, tok in enumerate(specials)}
    for tok in vocab:
        ids.setdefault(tok, len(ids))
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(specials)]
    root = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": TEKKEN_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": ids, "merges": merges},
    }
    out = os.path.join(os.path.dirname(__file__), "..", "tokenizer", "testdata", "tekken", "tokenizer.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(root, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("wrote", out, len(ids), "ids,", len(merges), "merges")


if __name__ == "__main__":
    main()
