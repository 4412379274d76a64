/**
 * npx tsx bench/batch-cost.ts [--calls 64] [--batches 300] [--turns 3]
 *
 * The server's share of one call inside a batch (src/store/batch.ts): on one local redis-server,
 * batches of --calls uncontended acquires (distinct keys), then batches of their releases, each
 * one EVALSHA of the bound batch script, beside the checked floor's batch (bench/peers.ts,
 * CHECKED_BATCH: the check reads once a batch, the acquire's EXISTS and SET, the release's
 * EXISTS, GET and DEL). INFO commandstats gives µs per EVALSHA; ÷ --calls, acquire and release
 * averaged, the median of --turns. A quick loop for the batch's work; `npm run bench:batching`
 * and `npm run bench` are the side-by-side with clients.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { batchArgs, batchLua } from '../src/store/batch.js';
import { boundLua } from '../src/store/scripts.js';
import { EPOCH_KEY, resourceKeys } from '../src/store/keys.js';
import { acquireArgs } from '../src/store/protocol.js';
import { Redlock } from '../src/index.js';
import { median } from './lib.js';
import { CHECKED_BATCH } from './peers.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '64' }, batches: { type: 'string', default: '300' }, turns: { type: 'string', default: '3' } },
});
const calls = Number(values.calls);
const batches = Number(values.batches);

const set = await processBackend.start(1);
const client = new Redis({ host: set.masters[0]!.host, port: set.masters[0]!.port });
try {
  const redlock = new Redlock([client]);
  await redlock.trustMembers();
  await (await redlock.acquire('batch-cost:warm', 1_000)).release(); // the epoch begins, settled
  const epochId = (await client.hget(EPOCH_KEY, 'id'))!;
  const runId = /run_id:(\w+)/.exec(await client.info('server'))![1]!;
  const ours = (await client.script('LOAD', boundLua(batchLua, runId, 'b0'))) as string;
  const floor = (await client.script('LOAD', CHECKED_BATCH)) as string;
  let key = 0;
  const names = () => Array.from({ length: calls }, () => `batch-cost:${++key}`);
  const request = (value: string) => ({ value, ttlMs: 10_000, waiter: { id: 'w.1', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false });

  const quorumlockBatches = async () => {
    const resources = names();
    const keysOf = (resource: string) => [...resourceKeys([resource]), EPOCH_KEY];
    const acquire = batchArgs(
      resources.map((r) => ({ script: 'quorumlockAcquire', keys: keysOf(r), args: [epochId, ...acquireArgs(request(`v:${r}`), epochId)] })),
    );
    await client.evalsha(ours, acquire.keys.length, ...acquire.keys, ...acquire.args);
    const release = batchArgs(resources.map((r) => ({ script: 'quorumlockRelease', keys: keysOf(r), args: [epochId, `v:${r}`] })));
    await client.evalsha(ours, release.keys.length, ...release.keys, ...release.args);
  };
  const floorBatches = async () => {
    const resources = names();
    for (const [kind, argsOf] of [
      ['a', (r: string) => ['epoch', `v:${r}`, '10000', 'w.1', '1', '0', '0', '0', 'epoch', '', '', '']],
      ['r', (r: string) => ['epoch', `v:${r}`, '', '']],
    ] as const) {
      const keys = [...resources.flatMap((r) => resourceKeys([r])), EPOCH_KEY];
      const args = resources.flatMap((r) => [kind, ...argsOf(r)]);
      await client.evalsha(floor, keys.length, ...keys, ...args);
    }
  };
  /** µs per call inside a batch: acquire and release batches averaged. */
  const perCall = async (run: () => Promise<void>) => {
    await client.config('RESETSTAT');
    for (let i = 0; i < batches; i++) await run();
    const stats = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'))!;
    return Number(stats[2]) / Number(stats[1]) / calls;
  };
  await perCall(quorumlockBatches); // warm up
  await perCall(floorBatches);
  const results = { quorumlock: [] as number[], floor: [] as number[] };
  for (let turn = 0; turn < Number(values.turns); turn++) {
    results.quorumlock.push(await perCall(quorumlockBatches));
    results.floor.push(await perCall(floorBatches));
  }
  console.log(`one redis-server, batches of ${calls} calls, ${batches} acquire and ${batches} release batches a turn; medians`);
  console.log(`  quorumlock's batch: ${median(results.quorumlock).toFixed(2)} µs per call`);
  console.log(`  the checked floor's batch: ${median(results.floor).toFixed(2)} µs per call`);
  await redlock.quit();
} finally {
  client.disconnect();
  await set.stop();
}
