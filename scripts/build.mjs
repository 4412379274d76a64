// Builds dist/ with one copy of the library, which every entry point shares:
//   dist/cjs/core.js          the library, bundled once (CommonJS, so that require() works on
//                             every Node 20; a package.json there says "commonjs"). It exports
//                             namespaces: `index` (the public API), `testing`, and each module
//                             of src/ that the CLI imports
//   dist/cjs/index.js         require('quorumlock'):         module.exports = core.index
//   dist/cjs/testing.js       require('quorumlock/testing'): module.exports = core.testing
//   dist/esm/index.js         import: Node's "ES module wrapper" for dual packages, re-exporting
//   dist/esm/testing.js       core's names (one copy also means one set of classes: no dual-package hazard)
//   dist/cli/main.js          the quorumlock command: its own code bundled (ESM, top-level await),
//                             its imports of the library rewritten to core's namespaces
//   dist/cjs/types/*.d.ts     tsc's declarations (read as CJS types, as the code they describe),
//                             those the entry points' types reach
//   dist/esm/types/{index,testing}.d.ts   `export *` of those, read as ESM types
// No source maps: the bundles are not minified, so a stack trace's line is readable as it is, and
// maps were half the package's size. ioredis stays the user's (a peer dependency); p-timeout and
// the like are inlined.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
// Comments stay in the sources and the declarations, not in the bundles: each module is read
// through TypeScript with removeComments (esbuild keeps some, e.g. in object literals: 42 kB).
const ts = createRequire(import.meta.url)('typescript');
const withoutComments = {
  name: 'without-comments',
  setup(bundle) {
    bundle.onLoad({ filter: /\/src\/.*\.ts$/ }, ({ path }) => ({
      contents: ts.transpileModule(readFileSync(path, 'utf8'), {
        fileName: path,
        compilerOptions: { removeComments: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, isolatedModules: true },
      }).outputText,
      loader: 'js',
      resolveDir: dirname(path),
    }));
  },
};
const common = { bundle: true, platform: 'node', target: 'node20', external: ['ioredis', 'iovalkey'], logLevel: 'warning', plugins: [withoutComments] };
const cliDir = resolve('src/cli');
const outsideCli = (path) => !resolve(path).startsWith(cliDir + '/');

// The modules of src/ outside src/cli that the CLI imports directly (after esbuild drops type-only
// imports), from a bundle pass that is not written.
const { metafile } = await build({ ...common, entryPoints: ['src/cli/main.ts'], format: 'esm', outfile: 'dist/cli/main.js', write: false, metafile: true });
const cliImports = new Set();
for (const [input, { imports }] of Object.entries(metafile.inputs)) {
  if (outsideCli(input)) continue;
  for (const { path } of imports) if (path.startsWith('src/') && outsideCli(path)) cliImports.add(resolve(path));
}
/** The namespace of core that holds a module of src/: store/keys.ts -> store_keys. */
const namespaceOf = (path) => relative('src', path).replace(/\.ts$/, '').replace(/\W/g, '_');
const modules = new Map([
  ['index', resolve('src/index.ts')],
  ['testing', resolve('src/testing.ts')],
  ...[...cliImports].map((path) => [namespaceOf(path), path]),
]);
await build({
  ...common,
  stdin: { contents: [...modules].map(([name, path]) => `export * as ${name} from ${JSON.stringify(path)};`).join('\n'), resolveDir: '.', loader: 'ts' },
  format: 'cjs',
  outfile: 'dist/cjs/core.js',
});
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
const core = createRequire(import.meta.url)(resolve('dist/cjs/core.js'));

/** An ES module exporting the names of one of core's namespaces, importing core at `from`. */
const reexport = (name, from) => `import core from ${JSON.stringify(from)};\nexport const { ${Object.keys(core[name]).join(', ')} } = core.${name};\n`;
mkdirSync('dist/esm/types', { recursive: true });
for (const entry of ['index', 'testing']) {
  writeFileSync(`dist/cjs/${entry}.js`, `'use strict';\nmodule.exports = require('./core.js').${entry};\n`);
  writeFileSync(`dist/esm/${entry}.js`, reexport(entry, '../cjs/core.js'));
  writeFileSync(`dist/esm/types/${entry}.d.ts`, `export * from '../../cjs/types/${entry}.js';\n`);
}

// The CLI: an import from src/cli of a module outside it becomes a module that re-exports that
// module's namespace of core (the path is relative to dist/cli/main.js, left as it is: external).
const fromCore = {
  name: 'library-from-core',
  setup(cli) {
    cli.onResolve({ filter: /^\.\.?\// }, ({ path, importer }) => {
      const target = resolve(dirname(importer), path.replace(/\.js$/, '.ts'));
      if (outsideCli(importer) || !outsideCli(target)) return undefined;
      if (!modules.has(namespaceOf(target))) throw new Error(`build: the CLI imports ${target}, which the first pass did not find`);
      return { path: namespaceOf(target), namespace: 'core' };
    });
    cli.onLoad({ filter: /.*/, namespace: 'core' }, ({ path }) => ({ contents: reexport(path, '../cjs/core.js'), loader: 'js' }));
  },
};
await build({
  ...common,
  entryPoints: ['src/cli/main.ts'],
  format: 'esm',
  outfile: 'dist/cli/main.js',
  external: [...common.external, '../cjs/core.js'],
  plugins: [fromCore, withoutComments],
});
chmodSync('dist/cli/main.js', 0o755);

execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });

// Declarations no entry point's types reach (the internals: rounds, members, scripts) are of no
// use to a user, whose imports the exports map limits to the entry points: not shipped.
const typesRoot = resolve('dist/cjs/types');
const reached = new Set();
const reach = (file) => {
  if (reached.has(file)) return;
  reached.add(file);
  for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*['"](\.[^'"]+)['"]/g)) {
    const target = resolve(dirname(file), specifier).replace(/\.js$/, '.d.ts');
    for (const candidate of [target, target.replace(/\.d\.ts$/, '/index.d.ts')]) if (existsSync(candidate)) reach(candidate);
  }
};
for (const entry of ['index', 'testing']) reach(join(typesRoot, `${entry}.d.ts`));
const prune = (directory) => {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) prune(path);
    else if (!reached.has(path)) rmSync(path);
  }
  if (readdirSync(directory).length === 0) rmSync(directory, { recursive: true });
};
prune(typesRoot);
console.log(`built ${join('dist', 'cjs')} (the library), dist/esm, dist/cli`);
