// Fails when src/ has an import cycle between files, or an import that points up the layers (type-only
// imports included: a cycle of types is still a cycle in the design). Run by `npm run lint`.
// Prints each file cycle as a chain of files, each cycle between folders, and each import that
// breaks the layer order, file by file. docs/architecture.md ("Layers") says what each layer holds.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The layers of src/, lowest first. A node is a top-level folder of src/, or a file directly in
// src/ (by its name without .ts). A module imports only from its own node and from nodes of lower
// layers; nodes that share a layer do not import each other.
const LAYERS = [
  ['errors', 'lua', 'tally'], // every error, with the vote records it carries; the script text; majority counting
  ['clock', 'diagnostics'], // the monotonic clock and drift; diagnostics_channel events and the Logger
  ['store'], // what is on a server: keys, scripts, the wire protocol, INFO
  ['clients'], // one adapter per Redis client library, behind the Connection interface
  ['members', 'fencing'], // one member: the Member interface, its server watch, epochs and script binding; the fenced write
  ['options'], // the user's options, checked before any I/O, and the settings they make
  ['waiting'], // lines of waiters, wake-ups by pub/sub
  ['quorum'], // the algorithm: round, attempt, loop, extend, release, fence, hand-over
  ['lock'], // a held Lock, reentrancy, keepExtended
  ['election', 'semaphore'], // features built on the lock
  ['redlock'], // the Redlock class
  ['index', 'testing'], // the package's entry points
  ['cli'], // the command line, a user of the public API
];

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.ts')) files.push(path);
  }
};
walk(src);

const importsOf = (file) => {
  const text = readFileSync(file, 'utf8');
  const targets = [];
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms, // import ... from, export ... from
    /^\s*import\s+'(\.[^']+)'/gm, // import for effect
    /\bimport\(\s*'(\.[^']+)'\s*\)/g, // import('...'), in code or in a type
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) targets.push(resolve(dirname(file), match[1].replace(/\.js$/, '.ts')));
  }
  return [...new Set(targets)].filter((target) => files.includes(target));
};
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const show = (file) => relative(root, file);
const problems = [];

// File cycles.
const state = new Map(); // 1 visiting, 2 done
const stack = [];
const visit = (file) => {
  state.set(file, 1);
  stack.push(file);
  for (const next of graph.get(file)) {
    if (state.get(next) === 1) problems.push(`import cycle: ${[...stack.slice(stack.indexOf(next)), next].map(show).join(' → ')}`);
    else if (!state.has(next)) visit(next);
  }
  stack.pop();
  state.set(file, 2);
};
for (const file of files) if (!state.has(file)) visit(file);

// Folder level: each file's node, and the imports between nodes.
const nodeOf = (file) => {
  const [first, ...rest] = relative(src, file).split('/');
  return rest.length > 0 ? first : first.replace(/\.ts$/, '');
};
const layerOf = new Map(LAYERS.flatMap((nodes, layer) => nodes.map((node) => [node, layer])));
const crossings = new Map(); // 'from → to' → ['file → file', ...]
for (const [file, targets] of graph) {
  for (const target of targets) {
    const [from, to] = [nodeOf(file), nodeOf(target)];
    if (from === to) continue;
    const key = `${from} → ${to}`;
    if (!crossings.has(key)) crossings.set(key, []);
    crossings.get(key).push(`${show(file)} → ${show(target)}`);
  }
}
const nodes = [...new Set(files.map(nodeOf))].sort();
for (const node of nodes) {
  if (!layerOf.has(node)) problems.push(`src/${node} is in no layer: add it to LAYERS in scripts/check-cycles.mjs (and to docs/architecture.md, "Layers")`);
}

// Cycles between nodes (strongly connected components of more than one node).
const edges = new Map(nodes.map((node) => [node, []]));
for (const key of crossings.keys()) {
  const [from, to] = key.split(' → ');
  edges.get(from).push(to);
}
let index = 0;
const order = new Map();
const low = new Map();
const open = [];
const visitNode = (node) => {
  order.set(node, index);
  low.set(node, index);
  index += 1;
  open.push(node);
  for (const next of edges.get(node)) {
    if (!order.has(next)) {
      visitNode(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (open.includes(next)) low.set(node, Math.min(low.get(node), order.get(next)));
  }
  if (low.get(node) === order.get(node)) {
    const component = open.splice(open.indexOf(node));
    if (component.length > 1) problems.push(`folder cycle between ${component.sort().join(', ')}`);
  }
};
for (const node of nodes) if (!order.has(node)) visitNode(node);

// Imports that do not point down the layers.
for (const [key, imports] of [...crossings].sort()) {
  const [from, to] = key.split(' → ');
  if (!layerOf.has(from) || !layerOf.has(to) || layerOf.get(from) > layerOf.get(to)) continue;
  const why = layerOf.get(from) === layerOf.get(to) ? 'the same layer' : 'a higher layer';
  problems.push(`layers: ${from} imports ${to}, ${why}:\n${imports.map((line) => `  ${line}`).join('\n')}`);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exit(1);
}
console.log(
  `check-cycles: ${files.length} modules in src/, no import cycle; ${nodes.length} folders and files in ${LAYERS.length} layers, every import points down`,
);
