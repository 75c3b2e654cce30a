#!/usr/bin/env python3
"""Writes tokenizer/testdata/spm/: a real SentencePiece-style BPE tokenizer
(Mistral-7B-Instruct-v0.3's tokenizer.json, tokenizer.model and
tokenizer_config.json, gzipped), a corpus of texts with the ids Google's
SentencePiece library gives them (sp.jsonl.gz), and chat renders of
Mistral-7B-Instruct-v0.3's and TinyLlama-1.1B-Chat-v1.0's chat templates by
transformers 4.51's Jinja environment (chat.jsonl). scripts/spm_reference.js
then adds what HF's tokenizers makes of the same texts (hf.jsonl.gz).

    apt-get install python3-sentencepiece     # Debian's build of Google's library (0.1.97 on bookworm)
    PYTHONPATH=/work/shared/pylib MEAZO_SHARED=/work/shared /usr/bin/python3 scripts/make_spm_fixture.py SRC [OUT]

SRC holds tokenizer.json, tokenizer.model and tokenizer_config.json (where
they come from: tokenizer/testdata/spm/README.md); OUT defaults to
tokenizer/testdata/spm. With OUT elsewhere (another checkpoint's files,
checked locally) the tokenizer files are not copied and no chat is rendered.
"""
import csv
import gzip
import json
import os
import random
import sys

import sentencepiece as spm

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer", "testdata", "spm")
SHARED = os.environ.get("MEAZO_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

SST2_SYSTEM = ("You are a sentiment analysis assistant. You will be given a user provided phrase or sentence, and "
               "your job will be to output terrible if it has negative sentiment or great if it has positive sentiment.")
SQUAD_SYSTEM = ("You are a question answering assistant. You will be given a user-provided context (paragraph or "
                "sentence), followed by a question. Your job will be to answer the question based on the paragraph "
                "or sentence.")

# Texts aimed at what differs from a byte-level BPE: spaces (leading,
# trailing, runs, alone), other whitespace, characters outside the
# vocabulary (byte fallback: emoji, rare CJK, controls), added tokens inside
# text (with and without spaces around them), and text that looks like a
# vocabulary entry ("▁", "<0x41>").
HAND = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", " \n ", "\r\n", "Hello", " Hello", "  Hello", "Hello ", "Hello  ",
    "Hello world", "Hello  world", " Hello world ", "a\tb", "a \t b", "line one\nline two\n", "x\r\ny",
    "trailing spaces   ", "   leading spaces", "mid   dle", "\u00a0nbsp\u00a0", "ideographic\u3000space",
    "emoji 🤗 😀👍🏽 👨‍👩‍👧", "🤗", "🤗🤗🤗", "日本語のテキスト", "中文文本，标点。", "한국어 텍스트", "𠀋𡈽𡌛 rare CJK",
    "Ελληνικά κείμενο", "Русский текст", "العربية", "עברית", "हिन्दी", "ไทย", "café naïve", "cafe\u0301 e\u0301",
    "\x00\x01\x1f\x7f controls", "\u200b zero width \u200d", "\ufeffBOM", "\U0001f9d1\u200d\U0001f4bb",
    "12345 678901 3.14159 1,000,000", "0", "2024-07-26T12:00:00Z", "$100.00 €50 £20 ¥1000",
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; i++) { a[i] = b[i]; }",
    "<html><body><p>Hi</p></body></html>", "https://example.com/path?q=1&r=2#frag", "user@example.com",
    "don't won't I'm you're it's", "HTTPServer XMLHttpRequest iPhone", "ALL CAPS TEXT", "MiXeD cAsE",
    "▁", "▁▁", "a▁b", "▁leading metaspace", "<0x41>", "<0x0A> <0xFF>", "<unk>", "<s>", "</s>", "<s><s></s>",
    "<s>Hello", "<s> Hello", "Hello</s>", "Hello </s> world", "</s>\nnext", "a<s>b</s>c",
    "[INST]", "[INST] What is 1+1? [/INST]", "[INST]What is 1+1?[/INST]", "[INST]  two spaces[/INST]  answer",
    "[/INST] Sure.</s>", "[TOOL_CALLS] [{\"name\": \"f\"}]", "[AVAILABLE_TOOLS] [][/AVAILABLE_TOOLS]",
    "[control_8] [control_768]", "[INST ] not a token [ /INST]", "<<SYS>>\nsystem\n<</SYS>>\n\n",
    "<|user|>\nHi</s>\n<|assistant|>\n", "!!!??? ... ---", "a" * 300, "ab" * 400, "🤗" * 300,
    "x " * 300, " " * 50, "\n" * 30, "supercalifragilisticexpialidocious" * 20,
]


def corpus():
    """(category, text) pairs: the shared public corpus, SST-2 and SQuAD dev
    texts and the prompts the trainer builds from them, XSum documents, the
    hand-made strings and seeded random mixes."""
    out = []
    with open(os.path.join(SHARED, "fixtures/tokenizers/ref/public/qwen3.corpus.jsonl"), encoding="utf-8") as f:
        out += [("public:" + r["cat"], r["text"]) for r in map(json.loads, f)]
    with open(os.path.join(SHARED, "data/sst2/dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    out += [("sst2", r[0]) for r in rows[:120]]
    out += [("sst2-prompt", "Sentence: " + r[0]) for r in rows[120:140]]
    with open(os.path.join(SHARED, "data/squad/dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    for a in articles[:12]:
        p = a["paragraphs"][0]
        out.append(("squad-context", p["context"]))
        out += [("squad-question", q["question"]) for q in p["qas"][:3]]
        q = p["qas"][0]
        out.append(("squad-prompt", "Title: " + a["title"] + "\n\nContext: " + p["context"] + "\n\nQuestion: " + q["question"]))
        out.append(("squad-answer", "Answer: " + q["answers"][0]["text"]))
    with open(os.path.join(SHARED, "data/xsum/test_subset.jsonl"), encoding="utf-8") as f:
        docs = [json.loads(line) for line in f][:6]
    out += [("xsum", d["document"]) for d in docs] + [("xsum-summary", d["summary"]) for d in docs]
    out += [("hand", t) for t in HAND]
    rng = random.Random(20261129)
    pool = [" ", "  ", "\n", "\t", "a", "the", "▁", "é", "日", "🤗", "<s>", "</s>", "[INST]", "[/INST]", "1", "23", ".", "'",
            "\u00a0", "Ω", "ß", "ﬁ", "<0x41>", "x"]
    out += [("random", "".join(rng.choice(pool) for _ in range(rng.randint(1, 40)))) for _ in range(60)]
    return out


def sp_differs(text, added, metaspace):
    """Why sentencepiece's ids are not HF's for text, or "" (they agree).
    HF splits the added tokens out of the text first; sentencepiece reads
    them as text. With a Metaspace pre-tokenizer (prepend_scheme first), HF
    prepends no "▁" to a text that starts with a space (or with "▁" itself);
    sentencepiece's dummy prefix always adds one."""
    if any(a in text for a in added):
        return "added token in text"
    if metaspace and text.startswith((" ", "\u2581")):
        return "leading space"
    return ""


def render_chats(config):
    """Both chat templates, rendered as apply_chat_template renders them."""
    import torch113_compat  # noqa: F401  (pylib's shim; before transformers)
    from transformers.utils.chat_template_utils import _compile_jinja_template

    with open(os.path.join(HERE, "tinyllama_chat_template.jinja"), encoding="utf-8") as f:
        templates = {"mistral-v0.3": (config["chat_template"], {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
                     "tinyllama": (f.read(), {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>"})}
    sst2 = "it 's a charming and often affecting journey . "
    squad_user = ("Title: Super_Bowl_50\n\nContext: Super Bowl 50 was an American football game to determine the champion "
                  "of the National Football League (NFL) for the 2015 season.\n\nQuestion: Which NFL team represented the AFC?")
    cases = [
        ("sst2_prompt", [{"role": "system", "content": SST2_SYSTEM}, {"role": "user", "content": "Sentence: " + sst2}], True),
        ("sst2_full", [{"role": "system", "content": SST2_SYSTEM}, {"role": "user", "content": "Sentence: " + sst2},
                       {"role": "assistant", "content": "Sentiment: great"}], False),
        ("squad_prompt", [{"role": "system", "content": SQUAD_SYSTEM}, {"role": "user", "content": squad_user}], True),
        ("squad_full", [{"role": "system", "content": SQUAD_SYSTEM}, {"role": "user", "content": squad_user},
                        {"role": "assistant", "content": "Answer: Denver Broncos"}], False),
        ("no_system", [{"role": "user", "content": "What is 1+1?"}], True),
        ("multi_turn", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                        {"role": "user", "content": "  spaces \n kept  "}], True),
        ("special_text", [{"role": "user", "content": "[INST] </s> {{ not a template }} 'q' \"d\" é日🤗"},
                          {"role": "assistant", "content": "ok"}], False),
        ("not_alternating", [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], False),
        ("assistant_first", [{"role": "assistant", "content": "a"}], False),
    ]
    out = []
    for name, (src, special) in templates.items():
        template = _compile_jinja_template(src)
        for case, messages, gen in cases:
            rec = {"template": name, "name": case, "messages": messages, "add_generation_prompt": gen}
            try:
                rec["rendered"] = template.render(messages=messages, tools=None, documents=None,
                                                  add_generation_prompt=gen, **special)
            except Exception as e:  # the template's raise_exception: TemplateError
                rec["error"] = str(e)
            out.append(rec)
    return out


def write_gz(src, dst, data=None):
    if data is None:
        with open(src, "rb") as f:
            data = f.read()
    with open(dst, "wb") as f:
        # mtime 0 and no name: the same bytes on every run
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as z:
            z.write(data)


def main():
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else HERE
    committed = os.path.abspath(out) == os.path.abspath(HERE)
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(os.path.join(src, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    added = [a["content"] for a in tok["added_tokens"]]
    metaspace = (tok.get("pre_tokenizer") or {}).get("type") == "Metaspace"
    sp = spm.SentencePieceProcessor(model_file=os.path.join(src, "tokenizer.model"))
    os.makedirs(out, exist_ok=True)
    if committed:
        os.makedirs(os.path.join(out, "mistral-v0.3"), exist_ok=True)
        for name in ["tokenizer.json", "tokenizer.model", "tokenizer_config.json"]:
            write_gz(os.path.join(src, name), os.path.join(out, "mistral-v0.3", name + ".gz"))
        with open(os.path.join(out, "chat.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in render_chats(config))
    recs = []
    for cat, text in corpus():
        recs.append({"cat": cat, "text": text, "sp_ids": sp.encode(text), "sp_differs": sp_differs(text, added, metaspace)})
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    write_gz(None, os.path.join(out, "sp.jsonl.gz"), lines.encode("utf-8"))
    print("wrote", len(recs), "texts;", sum(1 for r in recs if r["sp_differs"]), "where sentencepiece is known to differ")


if __name__ == "__main__":
    main()
