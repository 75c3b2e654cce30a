// Writes tokenizer/testdata/spm/hf.jsonl.gz and hf_decode.jsonl: what HF's
// tokenizers library (the Rust code, npm package tokenizers@0.23.2) makes
// of the texts of sp.jsonl.gz (scripts/make_spm_fixture.py) with a real
// SentencePiece-style tokenizer.json (Mistral-7B-Instruct-v0.3's, in
// testdata/spm/mistral-v0.3), and of id sequences aimed at the decoder.
//
// Besides the file as it is (a Metaspace pre-tokenizer, prepend_scheme
// "first", split false), each text is encoded with two variants made by
// rewriting its pre_tokenizer, which the Go test makes the same way
// (spmVariant in spm_test.go):
//   - "legacy": no pre-tokenizer and the normalizer of the older conversions
//     (Llama-2's, TinyLlama's): Sequence of Prepend "▁" and Replace " "→"▁";
//   - "always_split": Metaspace with prepend_scheme "always" and split true.
// The decode cases are also decoded with a Metaspace decoder in place of
// Replace/ByteFallback/Fuse/Strip ("metaspace_decoder").
//
//   (cd /tmp/x && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/x/node_modules node scripts/spm_reference.js [DIR [TOKENIZER_JSON]]
//
// DIR defaults to tokenizer/testdata/spm; TOKENIZER_JSON to
// DIR/mistral-v0.3/tokenizer.json.gz (another checkpoint's, for a local check).
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');

const dir = process.argv[2] || path.join(__dirname, '..', 'tokenizer', 'testdata', 'spm');
const source = process.argv[3] || path.join(dir, 'mistral-v0.3', 'tokenizer.json.gz');

// The pre-tokenizer block of Mistral's tokenizer.json, and what the variants
// put in its place (spm_test.go has the same strings).
const metaspaceBlock = `  "normalizer": null,
  "pre_tokenizer": {
    "type": "Metaspace",
    "replacement": "▁",
    "prepend_scheme": "first",
    "split": false
  },`;
const variants = {
  legacy: `  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,`,
  always_split: `  "normalizer": null,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},`,
};
const decoderBlock = /  "decoder": \{\r?\n    "type": "Sequence",[\s\S]*?\r?\n  \},\r?\n  "model"/;
const metaspaceDecoder = `  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},\n  "model"`;

function load(text) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'spm-')), 'tokenizer.json');
  fs.writeFileSync(file, text);
  return Tokenizer.fromFile(file);
}

function replaceOnce(text, from, to) {
  const n = typeof from === 'string' ? text.split(from).length - 1 : (text.match(new RegExp(from, 'g')) || []).length;
  if (n !== 1) throw new Error(`expected one ${from} in tokenizer.json, found ${n}`);
  return text.replace(from, to);
}

async function encode(tok, text, addSpecialTokens) {
  return Array.from((await tok.encode(text, null, { addSpecialTokens })).getIds());
}

// decodeCases are id sequences for the decoder: byte runs that are UTF-8 and
// that are not (whole runs become one U+FFFD per byte), byte runs cut by
// other tokens, special tokens, leading "▁"s, unknown ids, and seeded random
// sequences over the whole vocabulary.
function decodeCases(tok) {
  const id = (t) => tok.tokenToId(t);
  const named = [
    [], ['<0xE6>', '<0x97>', '<0xA5>'], ['<0xFF>'], ['<0x80>'], ['<0xE6>', '<0x97>'], ['<0xE6>', '<0x97>', '<0xA5>', '<0xE6>'],
    ['▁a', '<0xE6>', '<0x97>', '<0xA5>', '▁b'], ['<0xE6>', '</s>', '<0x97>', '<0xA5>'], ['<0xF0>', '<0x9F>', '<0xA4>', '<0x97>'],
    ['<0xC3>', '<0x28>'], ['<0xED>', '<0xA0>', '<0x80>'], ['<0x41>', '<0x0A>', '<0x09>'],
    ['<s>', '▁Hello', '▁world', '</s>'], ['▁Hello', '</s>', '<s>', '▁again'], ['▁▁', 'Hello'], ['▁'], ['▁▁'], ['▁', '▁'],
    ['Hello', '▁', '▁world'], ['[INST]', '▁Hi', '[/INST]', '▁Sure', '.', '</s>'], ['[control_8]', '▁x'], ['<unk>', '▁a'],
    ['▁▁▁▁', 'x'], ['<s>', '▁'], ['<s>', '▁▁', '▁a'],
  ].map((names) => names.map(id)).filter((ids) => ids.every((i) => i !== null && i !== undefined)); // another vocabulary may lack some
  named.push([id('▁a'), 40000, id('▁b')], [40000]);
  let seed = 20261129;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const size = tok.getVocabSize(true);
  for (let k = 0; k < 300; k++) {
    const ids = [];
    for (let n = 1 + (next() % 24); n > 0; n--) ids.push(next() % size);
    named.push(ids);
  }
  return named;
}

async function main() {
  const raw = source.endsWith('.gz') ? zlib.gunzipSync(fs.readFileSync(source)).toString('utf8') : fs.readFileSync(source, 'utf8');
  const tok = load(raw);
  const hasMetaspace = raw.includes(metaspaceBlock);
  const others = {};
  if (hasMetaspace) {
    for (const [name, block] of Object.entries(variants)) others[name] = load(replaceOnce(raw, metaspaceBlock, block));
  }
  const texts = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'sp.jsonl.gz'))).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text);
  const out = [];
  for (const text of texts) {
    const ids = await encode(tok, text, false);
    const rec = {
      text, ids, ids_with_special: await encode(tok, text, true),
      decoded: await tok.decode(ids, false), decoded_skip_special: await tok.decode(ids, true),
    };
    for (const [name, v] of Object.entries(others)) {
      rec[name] = { ids: await encode(v, text, false), ids_with_special: await encode(v, text, true) };
    }
    out.push(JSON.stringify(rec));
  }
  fs.writeFileSync(path.join(dir, 'hf.jsonl.gz'), zlib.gzipSync(out.join('\n') + '\n', { level: 9 }));

  const msDecoder = load(replaceOnce(raw, decoderBlock, metaspaceDecoder));
  const dec = [];
  for (const ids of decodeCases(tok)) {
    dec.push(JSON.stringify({
      ids, decoded: await tok.decode(ids, false), decoded_skip_special: await tok.decode(ids, true),
      metaspace_decoder: await msDecoder.decode(ids, false),
    }));
  }
  fs.writeFileSync(path.join(dir, 'hf_decode.jsonl'), dec.join('\n') + '\n');
  console.log('wrote', out.length, 'encodings', hasMetaspace ? 'with variants' : 'without variants', 'and', dec.length, 'decodings');
  if (!process.argv[3]) await tiny();
}

// tiny writes hf_tiny.jsonl: a made-up SentencePiece-style tokenizer
// without byte fallback (testdata/spm/tiny.json), where characters missing
// from the vocabulary become <unk> (a run of them one <unk> with fuse_unk),
// or are dropped without an unk_token, the Go test makes the variants the
// same way (TestSentencePieceUnknown).
async function tiny() {
  const raw = fs.readFileSync(path.join(dir, 'tiny.json'), 'utf8');
  const toks = {
    fuse: load(raw),
    no_fuse: load(replaceOnce(raw, '"fuse_unk": true', '"fuse_unk": false')),
    no_unk: load(replaceOnce(raw, '"unk_token": "<unk>"', '"unk_token": null')),
  };
  const texts = ['abc', 'axb', 'axyb', 'x', 'xyz abc', '日本 a', ' a b ', 'aéb', 'a\u00e9b', 'e\u0301', '<s>xx</s>y',
    'xx yy', 'x<s>x', 'abcx', '', ' ', '🤗🤗 ab 🤗'];
  const out = [];
  for (const text of texts) {
    const rec = { text };
    for (const [name, tok] of Object.entries(toks)) {
      const ids = await encode(tok, text, false);
      rec[name] = { ids, decoded: await tok.decode(ids, false) };
    }
    out.push(JSON.stringify(rec));
  }
  fs.writeFileSync(path.join(dir, 'hf_tiny.jsonl'), out.join('\n') + '\n');
  console.log('wrote', out.length, 'encodings of tiny.json');
}
main();
