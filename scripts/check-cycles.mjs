// Fails when src/ has an import cycle (type-only imports included: a cycle of types is still a
// cycle in the design). Run by `npm run lint`. Prints each cycle found as a chain of files.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
  for (const match of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
    targets.push(resolve(dirname(file), match[1].replace(/\.js$/, '.ts')));
  }
  return targets.filter((target) => files.includes(target));
};
const graph = new Map(files.map((file) => [file, importsOf(file)]));

const cycles = [];
const state = new Map(); // 1 visiting, 2 done
const stack = [];
const visit = (file) => {
  state.set(file, 1);
  stack.push(file);
  for (const next of graph.get(file)) {
    if (state.get(next) === 1) cycles.push([...stack.slice(stack.indexOf(next)), next]);
    else if (!state.has(next)) visit(next);
  }
  stack.pop();
  state.set(file, 2);
};
for (const file of files) if (!state.has(file)) visit(file);

if (cycles.length > 0) {
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((file) => relative(root, file)).join(' → ')}`);
  process.exit(1);
}
console.log(`check-cycles: ${files.length} modules in src/, no import cycle`);
