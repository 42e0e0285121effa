// Reference token ids from HF's Rust `tokenizers` (the Node binding
// @anush008/tokenizers 0.6.0, crate 0.22), for the conformance test.
//
//   node reference.js TOKENIZER_JSON CASES_JSON            golden JSON on stdout
//   node reference.js TOKENIZER_JSON CASES_JSON GOLDEN     exit 1 if GOLDEN differs
//
// CASES_JSON: {"encode": {category: [text...]}, "decode_bytes": [[hex byte...]],
// "decode_ids": [[id...]]}. Each decode_bytes entry becomes the ids of the
// single-byte tokens of those bytes. The golden holds, per case, the ids and
// HF's decode of them with and without skip_special_tokens.
// Packages come from scripts/setup.sh (.cache/tokenizer/node_modules), or
// from KERN_TOKENIZER_NODE_MODULES.
'use strict';
const fs = require('fs');
const path = require('path');

const modules = process.env.KERN_TOKENIZER_NODE_MODULES ||
    path.join(__dirname, '..', '..', '.cache', 'tokenizer', 'node_modules');
let Tokenizer;
try {
  ({Tokenizer} = require(path.join(modules, '@anush008', 'tokenizers')));
} catch (e) {
  console.error(`reference.js: cannot load @anush008/tokenizers from ${modules} ` +
                `(run scripts/setup.sh): ${e.message}`);
  process.exit(2);
}

// GPT-2 byte-level alphabet: the character that stands for byte b.
function byteChar(b) {
  const printable = (x) => (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
  if (printable(b)) return String.fromCodePoint(b);
  let n = 0;
  for (let x = 0; x < b; ++x) if (!printable(x)) ++n;
  return String.fromCodePoint(256 + n);
}

async function main() {
  const [tokenizerPath, casesPath, goldenPath] = process.argv.slice(2);
  if (!tokenizerPath || !casesPath) {
    console.error('usage: node reference.js TOKENIZER_JSON CASES_JSON [GOLDEN_TO_CHECK]');
    process.exit(2);
  }
  const tok = Tokenizer.fromFile(tokenizerPath);
  const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
  const decodeEntry = async (ids) => ({
    ids,
    text: await tok.decode(ids, false),
    text_skip_special: await tok.decode(ids, true),
  });
  const golden = {encode: [], decode: []};
  for (const [category, texts] of Object.entries(cases.encode)) {
    for (const text of texts) {
      const ids = Array.from((await tok.encode(text, null, {addSpecialTokens: true})).getIds());
      golden.encode.push({category, input: text, ...(await decodeEntry(ids))});
    }
  }
  for (const bytes of cases.decode_bytes || []) {
    const ids = bytes.map((h) => {
      const id = tok.tokenToId(byteChar(parseInt(h, 16)));
      if (id === null || id === undefined) throw new Error(`no single-byte token for ${h}`);
      return id;
    });
    golden.decode.push({bytes, ...(await decodeEntry(ids))});
  }
  for (const ids of cases.decode_ids || []) golden.decode.push(await decodeEntry(ids));

  // One case per line keeps the golden reviewable in diffs.
  const lines = ['{', '  "encode": ['];
  golden.encode.forEach((e, i) => lines.push('    ' + JSON.stringify(e) + (i + 1 < golden.encode.length ? ',' : '')));
  lines.push('  ],', '  "decode": [');
  golden.decode.forEach((e, i) => lines.push('    ' + JSON.stringify(e) + (i + 1 < golden.decode.length ? ',' : '')));
  lines.push('  ]', '}');
  const text = lines.join('\n') + '\n';
  if (!goldenPath) {
    process.stdout.write(text);
    return;
  }
  const old = fs.readFileSync(goldenPath, 'utf8');
  if (old === text) {
    console.log(`${goldenPath}: matches HF tokenizers (${golden.encode.length} encode, ${golden.decode.length} decode cases)`);
    return;
  }
  const a = old.split('\n'), b = text.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); ++i) {
    if (a[i] !== b[i]) {
      console.error(`${goldenPath}:${i + 1}: differs from HF tokenizers\n  golden: ${a[i]}\n  HF:     ${b[i]}`);
      break;
    }
  }
  console.error('regenerate with: node test/tokenizer/reference.js ' + process.argv.slice(2, 4).join(' ') + ' > GOLDEN');
  process.exit(1);
}

main().catch((e) => {
  console.error(`reference.js: ${e.stack || e}`);
  process.exit(1);
});
