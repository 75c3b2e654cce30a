#!/usr/bin/env python3
"""Writes tokenizer/testdata/gpt2_pretokenize.json: how GPT-2's pre-tokenizer pattern (GPT2Tokenizer's, which OPT's
tokenizer uses; HF tokenizers' ByteLevel with use_regex) splits text, computed with the `regex` module that
transformers' GPT2Tokenizer itself calls (re.findall(self.pat, text)). The texts are the edge cases below and 400
seeded random strings over an alphabet of the characters the pattern tells apart (letters, digits, marks, spaces of
several kinds, apostrophes, punctuation, CJK, emoji).

    /usr/bin/python3 scripts/make_gpt2_pretokenize_fixture.py tokenizer/testdata/gpt2_pretokenize.json

Needs Debian's python3-regex.
"""
import json
import random
import sys

import regex

# transformers' GPT2Tokenizer.pat, verbatim.
PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

EDGE = [
    "", " ", "  ", "a", " a", "a ", "a  b", "a   b ", "a\tb", "a\n\nb", "a \n b", " \n", "\n ", "\r\n\r\n x",
    "It's", "IT'S", "we'll 've 're 'm 'd 't 's", "'hello'", "''s", "rock 'n' roll", "don't", "O'Neil's",
    "1234567 89", " 12a", "x\u00b2\u00b3 \u00bd \u0663\u0664", "e\u0301t\u00e9", "caf\u00e9  na\u00efve",
    "\u00a0a\u00a0 b", "a\u2003b\u3000c", "\u65e5\u672c\u8a9e \u6f22\u5b57", "emoji \U0001F44D\U0001F3FD ok",
    "tab\there", "punct!!!  ??? ...", "$1,000.50", "a-b_c", "<s></s>", "trailing spaces   ", "   leading",
    "mix3d t0kens", "\u03a9mega \u03bc", "x\u200by", "\u0149 \u01c5 \u1f88",
]

ALPHABET = list("aZ\u00e9\u00df'''sltmdrevSLT  \t\n\r0123456789\u00b2\u00bd\u0663.,!?-_$%<>/") + [
    "\u00a0", "\u2003", "\u0301", "\u65e5", "\u8a9e", "\U0001F44D", "\u03a9", "\u01c5", "\u200b", "'s", "'ll"]


def main():
    out = sys.argv[1]
    rng = random.Random(31)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(400)]
    cases = [{"text": t, "pieces": PAT.findall(t)} for t in EDGE + texts]
    for c in cases:
        assert "".join(c["pieces"]) == c["text"], c
    with open(out, "w") as f:
        json.dump({"generator": "scripts/make_gpt2_pretokenize_fixture.py", "regex_version": regex.__version__,
                   "pattern": PAT.pattern, "cases": cases}, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
