// Writes src/lua/sources.ts from the .lua files beside it, so the scripts stay real files
// (runnable with redis-cli --eval) and still ship inside both the ESM and the CJS build.
// `node scripts/embed-lua.mjs --check` fails when sources.ts is out of date (run by the tests).
//
// The prelude: files whose name starts with `_` are only for including. Each one's header names
// what it provides (its top-level locals) and which prelude files it needs, with the names it
// takes from each:
//   -- Provides: currentEpoch, quarantineLeft
//   -- Needs: _compat.lua (unpack), _time.lua (now, readTime)
// (`-- Needs: nothing` when it needs none; a field may go on over lines that start with `--` and
// two or more spaces.) Both lists are checked against the code here, so a header cannot go stale.
// A script's line `-- #include name.lua` is replaced by that file, after whatever it needs that the
// script does not hold yet, each file once: the shipped text is in dependency order whatever the
// order of the lines. A name a script takes from the prelude must come from a file included
// before its use, and every file a script includes is used by it or by another file it includes
// (or runs statements of its own, as _bound.lua does).
//
// The shipped text carries no comments and no blank lines (the sources stay documented), and none
// of the prelude's definitions that the script never uses (prune). The scanner below follows Lua's
// own lexer for strings ('', "", [[ ]], [==[ ]==]) and comments (-- to the end of the line, --[[ ]],
// --[==[ ]==]), so a `--` inside a string is kept.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../src/lua/', import.meta.url));
const target = `${dir}sources.ts`;
const INCLUDE = /^-- #include (\S+)$/;
/** The line of the generic scripts that a bound copy replaces (src/store/scripts.ts, GENERIC_BINDING). */
const GENERIC_BINDING = 'local BOUND_RUN_ID = false';

const problems = [];
const fail = (file, message) => problems.push(`src/lua/${file}: ${message}`);

/** The level of a long bracket opening at `at` (`[[` 0, `[=[` 1, ...), or -1 when none opens there. */
function longBracket(text, at) {
  if (text[at] !== '[') return -1;
  let level = 0;
  while (text[at + 1 + level] === '=') level += 1;
  return text[at + 1 + level] === '[' ? level : -1;
}

/** `text` cut into code, string and comment pieces, as Lua's lexer reads it. */
function pieces(text, file) {
  const out = [];
  let code = '';
  const flush = () => {
    if (code) out.push({ kind: 'code', text: code });
    code = '';
  };
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char === '-' && text[i + 1] === '-') {
      flush();
      const level = longBracket(text, i + 2);
      let end;
      if (level >= 0) {
        const close = text.indexOf(`]${'='.repeat(level)}]`, i);
        if (close < 0) throw new Error(`src/lua/${file}: unterminated long comment`);
        end = close + level + 2;
      } else {
        end = text.indexOf('\n', i);
        if (end < 0) end = text.length;
      }
      out.push({ kind: 'comment', text: text.slice(i, end) });
      i = end;
    } else if (char === "'" || char === '"') {
      flush();
      let end = i + 1;
      while (text[end] !== char) {
        if (end >= text.length || text[end] === '\n') throw new Error(`src/lua/${file}: unterminated string`);
        end += text[end] === '\\' ? 2 : 1;
      }
      out.push({ kind: 'string', text: text.slice(i, end + 1) });
      i = end + 1;
    } else if (longBracket(text, i) >= 0) {
      flush();
      const level = longBracket(text, i);
      const close = text.indexOf(`]${'='.repeat(level)}]`, i);
      if (close < 0) throw new Error(`src/lua/${file}: unterminated long string`);
      out.push({ kind: 'string', text: text.slice(i, close + level + 2) });
      i = close + level + 2;
    } else {
      code += char;
      i += 1;
    }
  }
  flush();
  return out;
}

/**
 * The shipped text: comments gone, trailing blanks trimmed, blank lines dropped (never inside a
 * string). `dedent`: indentation too (last: prune reads it); a line always starts with code.
 */
function strip(text, file, dedent = false) {
  const lines = [];
  let line = '';
  const end = () => {
    if (line.trim() !== '') lines.push(dedent ? line.trim() : line.trimEnd());
    line = '';
  };
  for (const piece of pieces(text, file)) {
    // A --[[ ]] comment between two tokens on one line still separates them.
    if (piece.kind === 'comment') line += piece.text.includes('\n') || piece.text.startsWith('--[') ? ' ' : '';
    else if (piece.kind === 'string') line += piece.text;
    else {
      const [first, ...rest] = piece.text.split('\n');
      line += first;
      for (const next of rest) {
        end();
        line = next;
      }
    }
  }
  end();
  return lines.map((kept) => `${kept}\n`).join('');
}

const KEYWORDS = new Set('and break do else elseif end false for function goto if in local nil not or repeat return then true until while'.split(' '));

/**
 * The names `text` uses as variables (not after `.` or `:`), with their offsets, and the names it
 * declares anywhere (locals, loop variables, parameters): a name declared in a file is taken to be
 * its own there, never the prelude's.
 */
function names(text, file) {
  const used = [];
  const declared = new Set();
  let offset = 0;
  let previous = '';
  let declaring = false; // after `local` or `for`, until `=` or `in`
  let naming = false; // after `function`, until its `(`
  let parameters = false; // from a function's `(` to its `)`
  for (const piece of pieces(text, file)) {
    if (piece.kind === 'code') {
      for (const match of piece.text.matchAll(/[A-Za-z_]\w*|\d[\w.]*|\.\.\.?|\S/g)) {
        const token = match[0];
        const name = /^[A-Za-z_]/.test(token) && !KEYWORDS.has(token);
        if (name && (declaring || parameters)) declared.add(token);
        else if (name && !naming && previous !== '.' && previous !== ':') used.push({ name: token, at: offset + match.index });
        if (token === 'local' || token === 'for') declaring = true;
        else if (declaring && !name && token !== ',' && token !== 'function') declaring = false;
        if (token === 'function') naming = true;
        else if (naming && token === '(') [naming, parameters] = [false, true];
        else if (naming && !name && token !== '.' && token !== ':') naming = false;
        if (parameters && token === ')') parameters = false;
        previous = token;
      }
    } else if (piece.kind === 'string') previous = '""';
    offset += piece.text.length;
  }
  return { used, declared };
}

const read = (file) => readFileSync(dir + file, 'utf8');
const files = readdirSync(dir).filter((file) => file.endsWith('.lua'));
const preludeFiles = files.filter((file) => file.startsWith('_')).sort();
const scriptFiles = files.filter((file) => !file.startsWith('_')).sort();

/** A header field (`-- Provides:` / `-- Needs:`) of a prelude file, with its continuation lines. */
function field(text, name) {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`-- ${name}:`));
  if (start < 0) return undefined;
  let value = lines[start].slice(`-- ${name}:`.length);
  for (let next = start + 1; next < lines.length && /^-- {2,}\S/.test(lines[next]); next += 1) value += ` ${lines[next].slice(2)}`;
  return value.trim().replace(/\.$/, '');
}

/** Each prelude file: its text, the names it provides, and what it needs from whom. */
const prelude = new Map();
for (const file of preludeFiles) {
  const text = read(file);
  if (text.split('\n').some((line) => INCLUDE.test(line))) fail(file, 'a prelude file names what it needs in its header (-- Needs:), it includes nothing');
  const defined = [];
  for (const match of text.matchAll(/^local (?:function (\w+)|([\w, ]+?)\s*(?:=|$))/gm)) {
    defined.push(...(match[1] ?? match[2]).split(',').map((name) => name.trim()));
  }
  const provides = field(text, 'Provides');
  const needs = field(text, 'Needs');
  if (provides === undefined) fail(file, `its header has no "-- Provides:" line (it defines ${defined.join(', ')})`);
  else if ([...provides.split(/,\s*/)].sort().join() !== [...defined].sort().join()) {
    fail(file, `its header says "Provides: ${provides}", but it defines ${defined.join(', ')}`);
  }
  const declaredNeeds = new Map();
  if (needs === undefined) fail(file, 'its header has no "-- Needs:" line ("-- Needs: nothing" when it needs none)');
  else if (needs !== 'nothing') {
    for (const part of needs.split(/\),\s*/)) {
      const match = /^(_\w+\.lua) \(([^)]*)\)?$/.exec(part.trim());
      if (!match) fail(file, `cannot read "${part}" in its header's Needs: line (expected "_file.lua (name, name)")`);
      else declaredNeeds.set(match[1], match[2].split(/,\s*/));
    }
  }
  // A file with statements of its own (not only definitions) is included for what it does, too.
  const runs = text.split('\n').some((line) => /^[^\s-]/.test(line) && !/^(local |end\b|[})])/.test(line));
  prelude.set(file, { text, defined, needs: declaredNeeds, runs });
}
const provider = new Map();
for (const [file, { defined }] of prelude) {
  for (const name of defined) {
    if (provider.has(name)) fail(file, `defines ${name}, which ${provider.get(name)} defines too`);
    provider.set(name, file);
  }
}

/** The prelude names `text` takes from files other than `self`, by file, with their first offsets. */
function takes(text, file, self) {
  const { used, declared } = names(text, file);
  const byFile = new Map();
  for (const { name, at } of used) {
    const from = provider.get(name);
    if (!from || from === self || declared.has(name)) continue;
    if (!byFile.has(from)) byFile.set(from, new Map());
    if (!byFile.get(from).has(name)) byFile.get(from).set(name, at);
  }
  return byFile;
}

for (const [file, { text, needs }] of prelude) {
  const taken = takes(text, file, file);
  const actual = [...taken].map(([from, got]) => `${from} (${[...got.keys()].sort().join(', ')})`).sort();
  const stated = [...needs].map(([from, got]) => `${from} (${[...got].sort().join(', ')})`).sort();
  if (actual.join('; ') !== stated.join('; ')) {
    fail(file, `its header's Needs: should read "${actual.join(', ') || 'nothing'}" (it says "${stated.join(', ') || 'nothing'}")`);
  }
  for (const from of needs.keys()) if (!prelude.has(from)) fail(file, `needs ${from}, which does not exist`);
}

/** A script with its includes expanded: each prelude file once, after the files it needs. */
function expand(script) {
  const held = new Set();
  const visiting = [];
  const include = (file) => {
    if (held.has(file)) return '';
    if (!prelude.has(file)) {
      fail(script, `includes ${file}, which is not a prelude file (src/lua/_*.lua)`);
      return '';
    }
    if (visiting.includes(file)) {
      fail(file, `needs itself: ${[...visiting, file].join(' → ')}`);
      return '';
    }
    visiting.push(file);
    const before = [...prelude.get(file).needs.keys()].map(include).join('');
    visiting.pop();
    held.add(file);
    const { text } = prelude.get(file);
    return before + (text.endsWith('\n') ? text : `${text}\n`);
  };
  const own = read(script);
  // Where each prelude file arrives in the script's own text: a name taken before it is a global.
  const arrival = new Map();
  let offset = 0;
  let text = '';
  for (const line of own.split(/(?<=\n)/)) {
    const match = INCLUDE.exec(line.trimEnd());
    if (match) {
      text += include(match[1]);
      for (const file of held) if (!arrival.has(file)) arrival.set(file, offset);
    } else text += line;
    offset += line.length;
  }
  for (const [from, got] of takes(own, script, undefined)) {
    for (const [name, at] of got) {
      if (!arrival.has(from)) fail(script, `uses ${name} from ${from}, which it does not include`);
      else if (arrival.get(from) > at) fail(script, `uses ${name} before the line that includes ${from}`);
    }
  }
  // Each prelude file it carries is used by the script or by another file it carries.
  const ownTakes = takes(own, script, undefined);
  for (const file of held) {
    if (prelude.get(file).runs) continue;
    if (!ownTakes.has(file) && ![...held].some((other) => prelude.get(other).needs.has(file))) {
      fail(script, `includes ${file}, but nothing in it uses what ${file} provides`);
    }
  }
  return text;
}

/**
 * `text` without the prelude's definitions it never uses: a top-level `local function` (to its
 * `end` at the start of a line, every line between indented) or a constant, whose name nothing
 * else in the script reads, until none is left. Dropping an unused definition changes nothing.
 */
function prune(text, file) {
  for (;;) {
    const lines = text.split('\n');
    const uses = new Map();
    for (const { name } of names(text, file).used) uses.set(name, (uses.get(name) ?? 0) + 1);
    const drop = new Set();
    lines.forEach((line, at) => {
      const match = /^local (?:function (\w+)\(|(\w+) = (?:'[^'\\]*'|-?\d+|true|false)$)/.exec(line);
      const name = match?.[1] ?? match?.[2];
      if (!name || !provider.has(name) || uses.has(name)) return;
      let end = at;
      if (match[1]) {
        end = lines.indexOf('end', at);
        if (end < 0 || lines.slice(at + 1, end).some((inner) => !/^\s/.test(inner))) return;
      }
      for (let line = at; line <= end; line += 1) drop.add(line);
    });
    if (drop.size === 0) return text;
    text = lines.filter((_, at) => !drop.has(at)).join('\n');
  }
}

const shipped = new Map(scriptFiles.map((file) => [file, strip(prune(strip(expand(file), file), file), file, true)]));
for (const [file, text] of shipped) {
  if (text.includes('BOUND_RUN_ID') && !text.split('\n').includes(GENERIC_BINDING)) {
    fail(file, `reads BOUND_RUN_ID, but its shipped text lacks the line "${GENERIC_BINDING}" that a bound copy replaces`);
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exit(1);
}

/**
 * The prelude's top-level statements as shipped (each definition whole, as prune keeps or drops
 * it), by name: a statement starts on an unindented line and runs through the indented lines and
 * closing lines (`end`, `}`) after it.
 */
function statements(file, text) {
  const blocks = [];
  for (const line of strip(text, file).split(/(?<=\n)/)) {
    const opens = /^\S/.test(line) && !/^(end\b|[})\]]|else\b|elseif\b|until\b)/.test(line);
    if (opens || blocks.length === 0) blocks.push('');
    blocks[blocks.length - 1] += line;
  }
  return blocks.map((block, index) => {
    const name = /^local (?:function )?(\w+)/.exec(block)?.[1] ?? `${file.slice(1, -4)}${index}`;
    return { name: `lua_${name}`, text: strip(block, file, true) };
  });
}

// Each script's text is the concatenation of the prelude statements it keeps and its own lines:
// the prelude's pieces that two scripts or more carry are written once, and each script joins
// them (the package carries one copy of, say, the epoch reading instead of one per script).
const pieceCounts = new Map();
const allPieces = [...prelude].flatMap(([file, { text }]) => statements(file, text)).filter((piece) => piece.text.length >= 40);
for (const piece of allPieces) {
  for (const text of shipped.values())
    if (text.startsWith(piece.text) || text.includes(`\n${piece.text}`)) pieceCounts.set(piece, (pieceCounts.get(piece) ?? 0) + 1);
}
const shared = allPieces.filter((piece) => (pieceCounts.get(piece) ?? 0) >= 2).sort((a, b) => b.text.length - a.text.length);
const usedPieces = new Set();
/** `text` as parts: shared pieces (by name) and literal runs, in order; joined, they give `text` back. */
function parts(file, text) {
  const out = [];
  let literal = '';
  let at = 0;
  while (at < text.length) {
    const piece = shared.find((candidate) => text.startsWith(candidate.text, at));
    if (piece) {
      if (literal) out.push(JSON.stringify(literal));
      literal = '';
      out.push(piece.name);
      usedPieces.add(piece);
      at += piece.text.length;
    } else {
      const next = text.indexOf('\n', at) + 1 || text.length;
      literal += text.slice(at, next);
      at = next;
    }
  }
  if (literal) out.push(JSON.stringify(literal));
  const joined = out.map((part) => (part.startsWith('"') ? JSON.parse(part) : shared.find((piece) => piece.name === part).text)).join('');
  if (joined !== text) fail(file, 'its text does not join back from its parts (scripts/embed-lua.mjs, parts)');
  return out.join(' + ');
}
const scriptsBody = [...shipped].map(([file, text]) => [file, parts(file, text)]);
const pieceNames = new Set();
for (const piece of usedPieces) {
  if (pieceNames.has(piece.name)) fail('(prelude)', `two shared pieces are named ${piece.name}`);
  pieceNames.add(piece.name);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exit(1);
}
// Typed `string`, so that the declarations tsc emits do not repeat each script as a literal type.
const body = [
  ...shared.filter((piece) => usedPieces.has(piece)).map((piece) => `const ${piece.name} = ${JSON.stringify(piece.text)};`),
  ...scriptsBody.map(([file, joined]) => `export const ${file.slice(0, -4)}Lua: string = ${joined};`),
].join('\n');
const text = `// Generated by scripts/embed-lua.mjs from src/lua/*.lua (includes expanded, comments, blank lines and
// indentation stripped; the prelude's pieces that several scripts carry written once). Edit the .lua
// files, then run it.\n${body}\n`;

if (process.argv.includes('--check')) {
  const current = readFileSync(target, 'utf8');
  if (current !== text) {
    console.error('src/lua/sources.ts is out of date: run node scripts/embed-lua.mjs');
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
}
