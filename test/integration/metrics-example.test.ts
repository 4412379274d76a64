/**
 * The prom-client example of docs/operations.md ("Observability"), run as the docs show it: the
 * code block between the metrics-example markers is written out with only its 'quorumlock'
 * import pointed at src/, typechecked, and imported. Then a locks_held gauge fed by it must read
 * right at each step of a lock's possible lives: released (twice), lost, expired unreleased.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'prom-client';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LockExtendError, Redlock } from '../../src/index.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { eventually, fresh } from './util.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The ```ts block between the markers in docs/operations.md, as the reader sees it. */
function documentedExample(): string {
  const doc = readFileSync(join(root, 'docs/operations.md'), 'utf8');
  const match = /<!-- metrics-example:start[^>]*-->\s*```ts\n([\s\S]*?)```\s*<!-- metrics-example:end -->/.exec(doc);
  if (!match) throw new Error('docs/operations.md: no ```ts block between the metrics-example markers');
  return match[1]!;
}

const example = documentedExample();
// .tmp/ is gitignored and outside the linted tree; one file per process, removed after.
const exampleFile = join(root, '.tmp', `metrics-example-${process.pid}.ts`);

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(async () => {
  rmSync(exampleFile, { force: true });
  await servers?.close();
});

it('the documented example imports only prom-client and quorumlock', () => {
  const imports = [...example.matchAll(/from '([^']+)'/g)].map((match) => match[1]);
  expect(imports.sort()).toEqual(['prom-client', 'quorumlock']);
  writeExample();
});

function writeExample(): void {
  mkdirSync(dirname(exampleFile), { recursive: true });
  writeFileSync(exampleFile, example.replace("from 'quorumlock'", "from '../src/index.js'"));
}

it('the documented example typechecks against the exported message types', () => {
  writeExample();
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
  };
  const program = ts.createProgram([exampleFile], options);
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file?.fileName === exampleFile)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  expect(problems).toEqual([]);
});

async function gauge(): Promise<number> {
  const metric = register.getSingleMetric('locks_held');
  if (!metric) throw new Error('the example registered no locks_held gauge');
  return (await metric.get()).values[0]?.value ?? 0;
}

/**
 * The value of `name` with these labels; of one of its series (`series`: a histogram's
 * `<name>_count`, not its buckets) when given.
 */
async function counted(name: string, labels: Record<string, string>, series?: string): Promise<number> {
  const metric = register.getSingleMetric(name);
  if (!metric) throw new Error(`the example registered no ${name}`);
  const values = (await metric.get()).values as { value: number; metricName?: string; labels: Record<string, string | number> }[];
  const entry = values.find(
    (entry) => (series === undefined || entry.metricName === series) && Object.entries(labels).every(([key, value]) => entry.labels[key] === value),
  );
  return entry?.value ?? 0;
}

it('keeps locks_held right: acquire 3, release one twice, lose one, let one expire unreleased', async () => {
  writeExample();
  // Subscribes at import, before any lock is taken, as the docs say to.
  await import(/* @vite-ignore */ exampleFile);
  const redlock = new Redlock(servers.clients, { retryCount: 1, retryDelay: 10 });

  const [released, lost, kept] = await Promise.all([fresh('released'), fresh('lost'), fresh('kept')].map((name) => redlock.acquire(name, 10_000)));
  expect(await gauge()).toBe(3);

  // A refused acquire is a failure, not a lock.
  await expect(redlock.acquire(kept!.resources[0]!, 10_000)).rejects.toMatchObject({ outcome: 'taken' });
  expect(await gauge()).toBe(3);
  expect(await counted('lock_acquire_failures_total', { outcome: 'taken' })).toBe(1);

  // Released twice: one end of holding, and the second call still answers.
  expect((await released!.release()).freed).toBe(true);
  expect(await gauge()).toBe(2);
  expect((await released!.release()).freed).toBe(true); // absent everywhere counts as freed
  expect(await gauge()).toBe(2);

  // Lost: its keys deleted on a majority, so the next extend finds it gone. Its signal was never read.
  const [first, second] = servers.clients;
  await Promise.all([first!.del(lost!.resources[0]!), second!.del(lost!.resources[0]!)]);
  const failure = await lost!.extend(10_000).catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(LockExtendError);
  expect((failure as LockExtendError).reason).toBe('lost');
  expect(await gauge()).toBe(1);
  expect(await counted('locks_lost_total', { lostBecause: 'gone' })).toBe(1);
  // Released after its loss: the loss was its end of holding, so no second decrement.
  await lost!.release();
  expect(await gauge()).toBe(1);

  // Expires unreleased, nobody reading its signal: the gauge follows once its validity runs out.
  const expiring = await redlock.acquire(fresh('expiring'), 200);
  expect(await gauge()).toBe(2);
  await eventually(async () => expect(await gauge()).toBe(1));
  expect(expiring.remainingMs()).toBe(0);
  expect(await counted('locks_lost_total', { lostBecause: 'expired' })).toBe(1);
  await expiring.release(); // late, and no second decrement
  expect(await gauge()).toBe(1);

  // using(): acquired and released inside, the gauge back where it was.
  await redlock.using(fresh('using'), 1_000, async () => expect(await gauge()).toBe(2));
  expect(await gauge()).toBe(1);

  await kept!.release();
  expect(await gauge()).toBe(0);
  // Every acquire observed once, by outcome (the histogram's count, not a bucket: how many took
  // under 5 ms is the machine's business).
  expect([
    await counted('lock_acquire_seconds', { acquired: 'true' }, 'lock_acquire_seconds_count'),
    await counted('lock_acquire_seconds', { acquired: 'false' }, 'lock_acquire_seconds_count'),
  ]).toEqual([5, 1]);
});
