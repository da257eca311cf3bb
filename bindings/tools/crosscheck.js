'use strict';
// crosscheck.js DIR [LANG...] - the bindings must give the same answers as the C CLI.
// DIR holds LANG.txt for each binding (default: go java node rust python; each binding's typed
// answers to the example request, every double as the 16 hex digits of its IEEE-754 bits; an
// absent value, such as a noul answer's confidence, as `none`) and cli.json (the output of
// `skycmd decide`). Checks: (1) the four dumps are byte-identical; (2) every number the CLI
// printed equals the bindings' double to the last printed digit (the double rounded to the
// printed number of significant digits gives the printed value), and choices, keys, types and
// input_tokens agree. Prints one summary line; exit 1 on any difference.
const fs = require('fs');
const path = require('path');

const dir = process.argv[2];
const langs = process.argv.length > 3 ? process.argv.slice(3) : ['go', 'java', 'node', 'rust', 'python'];
const dumps = {};
const problems = [];
for (const l of langs) {
  const f = path.join(dir, `${l}.txt`);
  if (!fs.existsSync(f)) problems.push(`${l}: no dump (${f})`);
  else dumps[l] = fs.readFileSync(f, 'utf8');
}
const present = Object.keys(dumps);
for (const l of present) {
  if (dumps[l] !== dumps[present[0]]) problems.push(`${l} differs from ${present[0]}:\n${dumps[l]}\nvs\n${dumps[present[0]]}`);
}

// A JSON parser that keeps the printed text of numbers.
function parse(text) {
  let i = 0;
  const ws = () => { while (/\s/.test(text[i])) i++; };
  function value() {
    ws();
    const c = text[i];
    if (c === '{') {
      i++; const o = {}; ws();
      if (text[i] === '}') { i++; return o; }
      for (;;) {
        ws(); const k = value(); ws(); if (text[i++] !== ':') throw new Error(`':' expected at ${i}`);
        o[k] = value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === '}') return o;
        throw new Error(`bad object at ${i}`);
      }
    }
    if (c === '[') {
      i++; const a = []; ws();
      if (text[i] === ']') { i++; return a; }
      for (;;) {
        a.push(value()); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i++] === ']') return a;
        throw new Error(`bad array at ${i}`);
      }
    }
    if (c === '"') {
      const start = i;
      i++;
      while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i));
    }
    const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?|^(true|false|null)/.exec(text.slice(i));
    if (!m) throw new Error(`bad value at ${i}`);
    i += m[0].length;
    if (m[3]) return JSON.parse(m[3]);
    return { num: m[0] };
  }
  return value();
}

function bitsToDouble(hex) {
  if (hex === 'none') return null;
  const b = Buffer.from(hex, 'hex');
  return b.readDoubleBE(0);
}

function sigDigits(s) {
  const mant = s.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '');
  return Math.max(1, mant.length);
}

let compared = 0;
let exact = 0;
function same(what, printed, v) {
  compared++;
  const p = Number(printed.num);
  if (p === v) { exact++; return; }
  const ok = p !== 0 && Number(v.toPrecision(Math.min(100, sigDigits(printed.num)))) === p;
  if (!ok) problems.push(`${what}: CLI printed ${printed.num}, bindings have ${v}`);
}

const dump = dumps[present[0]] || '';
let cli;
try {
  cli = parse(fs.readFileSync(path.join(dir, 'cli.json'), 'utf8'));
} catch (e) {
  problems.push(`cli.json: ${e.message}`);
}
if (cli && dump) {
  let cur = null;
  const seen = [];
  for (const line of dump.trim().split('\n')) {
    const f = line.split(' ');
    if (f[0] === 'input_tokens') {
      if (String(cli.usage.input_tokens.num) !== f[1]) problems.push(`input_tokens: CLI ${cli.usage.input_tokens.num}, bindings ${f[1]}`);
    } else if (f[0] === 'answer') {
      const [, id, type, choiceKV, valueKV, confKV] = f;
      seen.push(id);
      cur = { id, type, a: cli.answers[id] };
      if (!cur.a) { problems.push(`answer ${id} missing in CLI output`); continue; }
      if (cur.a.type !== type) problems.push(`${id}: type ${type} vs CLI ${cur.a.type}`);
      const value = bitsToDouble(valueKV.split('=')[1]);
      const conf = bitsToDouble(confKV.split('=')[1]);
      if (type === 'choice') {
        if (cur.a.choice !== choiceKV.slice(7)) problems.push(`${id}: choice ${choiceKV.slice(7)} vs CLI ${cur.a.choice}`);
        same(`${id}.confidence`, cur.a.confidence, conf);
        same(`${id}.value (p of choice)`, cur.a.probabilities[cur.a.choice], value);
      } else if (type === 'score') {
        same(`${id}.score`, cur.a.score, value);
        same(`${id}.confidence`, cur.a.confidence, conf);
      } else if (type === 'noul') {
        same(`${id}.noul`, cur.a.noul, value);
        if (conf !== null) problems.push(`${id}: noul confidence is not absent ('none')`);
      }
    } else if (f[0] === 'option') {
      if (!cur || !cur.a) continue;
      const [, key, hex] = f;
      const v = bitsToDouble(hex);
      if (cur.type === 'noul') {
        if (key === 'true') same(`${cur.id}.p(true)`, cur.a.noul, v);
      } else if (!cur.a.probabilities || !(key in cur.a.probabilities)) {
        problems.push(`${cur.id}: option ${key} missing in CLI output`);
      } else {
        same(`${cur.id}.p(${key})`, cur.a.probabilities[key], v);
      }
    }
  }
  const cliIds = Object.keys(cli.answers);
  if (cliIds.join() !== seen.join()) problems.push(`answer ids/order: CLI ${cliIds} vs bindings ${seen}`);
}

if (problems.length) {
  console.log(`crosscheck: FAIL (${problems.length} problem(s))`);
  for (const p of problems) console.log(`  ${p}`);
  process.exit(1);
}
console.log(`crosscheck: OK - ${present.join(', ')} dumps identical; ${compared} numbers equal to the CLI's to the last printed digit (${exact} bit-exact)`);
