// Builds dist/ for both module systems:
//   dist/esm/index.js  + dist/esm/types/*.d.ts   (import)
//   dist/esm/testing.js, dist/cjs/testing.js     (quorumlock/testing: helpers for test suites)
//   dist/cli/main.js                             (the quorumlock command)
//   dist/cjs/index.js  + dist/cjs/types/*.d.ts   (require; a package.json there says "commonjs",
//                                                 so the same .d.ts files read as CJS types)
// esbuild bundles the code (p-timeout is ESM-only, so it is inlined; ioredis stays the user's);
// tsc writes the declarations.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, ['scripts/embed-lua.mjs'], { stdio: 'inherit' });
const common = { entryPoints: ['src/index.ts'], bundle: true, platform: 'node', target: 'node20', external: ['ioredis'], sourcemap: true, logLevel: 'warning' };
await build({ ...common, format: 'esm', outfile: 'dist/esm/index.js' });
await build({ ...common, format: 'cjs', outfile: 'dist/cjs/index.js' });
// quorumlock/testing (package.json "exports"): helpers for test suites only, never imported by
// the main entry. Bundled on its own; it shares no state with the main bundle (resetMembers
// works on the user's clients, not on a Redlock).
await build({ ...common, entryPoints: ['src/testing.ts'], format: 'esm', outfile: 'dist/esm/testing.js' });
await build({ ...common, entryPoints: ['src/testing.ts'], format: 'cjs', outfile: 'dist/cjs/testing.js' });
// The CLI (package bin): ESM with its shebang, ioredis the installed one.
await build({ ...common, entryPoints: ['src/cli/main.ts'], format: 'esm', outfile: 'dist/cli/main.js' });
chmodSync('dist/cli/main.js', 0o755);
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
mkdirSync('dist/cjs/types', { recursive: true });
cpSync('dist/esm/types', 'dist/cjs/types', { recursive: true });
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
console.log('built dist/esm and dist/cjs');
