/**
 * npm run bench:instructions [-- --cycles 5000]
 *
 * The client's work per acquire + release cycle at concurrency 1 as instructions, not time:
 * quorumlock (the built package), node-redlock 4 and the checked floor, each in a process of its
 * own under valgrind's cachegrind (user-space instructions executed, every thread; the masters
 * run outside it), on five local masters. Each runs twice, 1,500 warm-up cycles then 0 or
 * `--cycles` more; the difference over `--cycles` is its instructions per cycle, start-up,
 * warm-up and JIT compilation cancelled out. A shared VM's CPU time per cycle moves by 10–30 %
 * from run to run (docs/performance.md); an instruction count moves by 2–7 % over 5,000 cycles
 * (a collection falls in the window or not: `--cycles 20000` narrows it). It counts work, not what
 * the work costs: cache misses and the kernel's share (the writes) are not in it.
 * Needs valgrind (`apt-get install valgrind`); about 5 minutes.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { build } from 'esbuild';
import { floorAndNodeRedlock, withLockers } from './peers.js';

const WARM_UP = 1500;
const { values } = parseArgs({
  options: { cycles: { type: 'string', default: '5000' }, child: { type: 'string' }, count: { type: 'string' } },
});

if (values.child !== undefined) {
  // One locker's cycles, under valgrind (the parent starts this).
  const count = WARM_UP + Number(values.count);
  await withLockers(floorAndNodeRedlock, async (lockers) => {
    const locker = lockers.find(([name]) => name === values.child)![1];
    for (let i = 0; i < count; i++) await (await locker.acquire(`instructions:${i}`, 10_000)).release();
  });
} else {
  const cycles = Number(values.cycles);
  const root = fileURLToPath(new URL('..', import.meta.url));
  // Bundled, so that valgrind runs no TypeScript compiler; under the repository for its node_modules.
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const bundle = join(root, '.tmp', 'bench-instructions.mjs');
  await build({
    entryPoints: [fileURLToPath(import.meta.url)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: bundle,
    logLevel: 'warning',
  });
  const run = promisify(execFile);
  const instructions = async (name: string, count: number): Promise<number> => {
    const { stderr } = await run(
      'valgrind',
      [
        '--tool=cachegrind',
        '--cache-sim=no',
        '--smc-check=all-non-file',
        '--cachegrind-out-file=/dev/null',
        process.execPath,
        bundle,
        '--child',
        name,
        '--count',
        String(count),
      ],
      { env: { ...process.env, QUORUMLOCK_BENCH_BUILT: '1' }, maxBuffer: 1 << 24 },
    );
    const refs = /I\s+refs:\s+([\d,]+)/.exec(stderr);
    if (!refs) throw new Error(`no instruction count from valgrind for ${name}:\n${stderr.slice(-2000)}`);
    return Number(refs[1]!.replaceAll(',', ''));
  };
  console.log(`client instructions per acquire + release cycle at c = 1 (cachegrind; ${cycles} cycles after ${WARM_UP} of warm-up)`);
  const perCycle = new Map<string, number>();
  for (const name of ['quorumlock', 'node-redlock', 'checked floor']) {
    // The two runs side by side: two cores, and valgrind runs one thread at a time.
    const [base, measured] = await Promise.all([instructions(name, 0), instructions(name, cycles)]);
    perCycle.set(name, (measured - base) / cycles);
  }
  const reference = perCycle.get('node-redlock')!;
  for (const [name, count] of perCycle)
    console.log(`  ${name.padEnd(13)}  ${(count / 1000).toFixed(0).padStart(5)} k instructions  (${(count / reference).toFixed(2)}× node-redlock's)`);
}
