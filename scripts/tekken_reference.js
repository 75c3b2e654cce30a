// Writes tokenizer/testdata/tekken/reference.jsonl: what HF's tokenizers
// library (the Rust code, npm package tokenizers@0.23.2) makes of
// tokenizer/testdata/tekken/tokenizer.json (scripts/make_tekken_fixture.py)
// on the public tokenizer corpus (MEAZO_SHARED's
// fixtures/tokenizers/ref/public/qwen3.corpus.jsonl, texts only) and on
// strings that exercise tekken's split: case changes inside words (its regex
// has no contractions: "don't" is "don" + "'t", "iPhone" is "i" + "Phone"),
// combining marks, titlecase letters, single digits, "/" runs. The
// pre-tokenizer's pieces (byte-level encoded) are recorded too: with a small
// vocabulary most ids are single bytes, which would hide where a split falls.
//
//   (cd /tmp/x && npm install tokenizers@0.23.2)
//   NODE_PATH=/tmp/x/node_modules MEAZO_SHARED=/work/shared node scripts/tekken_reference.js
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const dir = path.join(__dirname, '..', 'tokenizer', 'testdata', 'tekken');
const shared = process.env.MEAZO_SHARED || path.join(__dirname, '..', '..', 'shared');
const corpus = fs.readFileSync(path.join(shared, 'fixtures/tokenizers/ref/public/qwen3.corpus.jsonl'), 'utf8')
  .split('\n').filter(Boolean).map((l) => JSON.parse(l).text);
const extra = [
  'HTTPServer', 'XMLHttpRequest', 'iPhone McDonald\'s', 'ÉCOLE École', 'ABCdef GHIjkl', 'aBC',
  'ǅemal ǈubljana', 'e\u0301cole cafe\u0301', '\u0301\u0301a', 'x\u0301Y\u0302z', 'Ա\u0561', 'ʰʷa ʰA',
  'path/to/file //x/ !!/\n/', 'a!/\r\n/b', 'fin de l\'été', '12345 1,234.5', '٣٤ ½ Ⅻ', '日本語ABC漢字def',
  'don\'t DON\'T I\'M', '\t\n\n  x  \n', ' [INST]hi[/INST]</s>', '<s>[SYSTEM_PROMPT]sys[/SYSTEM_PROMPT]',
  '[IMG]<pad><SPECIAL_999>', '',
];

async function main() {
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const pre = tok.getPreTokenizer();
  const out = [];
  for (const text of corpus.concat(extra)) {
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const withSpecial = await tok.encode(text, null, { addSpecialTokens: true });
    const ids = Array.from(plain.getIds());
    out.push(JSON.stringify({
      text, pieces: pre.preTokenizeString(text).map((p) => p[0]), ids, ids_with_special: Array.from(withSpecial.getIds()),
      decoded: await tok.decode(ids, false), decoded_skip_special: await tok.decode(ids, true),
    }));
  }
  fs.writeFileSync(path.join(dir, 'reference.jsonl'), out.join('\n') + '\n');
  console.log('wrote', out.length, 'encodings');
}
main();
