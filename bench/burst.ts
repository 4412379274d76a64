/**
 * npx tsx bench/burst.ts [-- --count 10000] [-- --wait-timeout 10000] [-- --retry-count 3]
 *
 * A burst: `count` acquires of distinct resources started at once on five healthy local masters,
 * then all released at once. Prints how many were taken, how the others failed, and the times.
 * test/integration/stall.test.ts runs a smaller one on every `npm test`; this is the full size of
 * issue 10 (defect 6), too slow for the suite on two busy cores.
 *
 * Every acquire has its wait budget (waitTimeout; by default (retryCount + 1) × (nodeTimeout +
 * max(nodeTimeout, retryDelay + retryJitter)) = 1400 ms with retryCount 3). Time this process
 * spends starting and writing the burst counts against it: where the machine cannot even send
 * the burst within the budget, the first acquires fail 'wait budget exhausted', which is what the
 * budget promises. Give the burst a budget it can meet (--wait-timeout) to see it slow down
 * instead.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { LockAcquireError, Redlock, systemClock } from '../src/index.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    'wait-timeout': { type: 'string' },
    'retry-count': { type: 'string', default: '3' },
  },
});
const count = Number(values.count);
const waitTimeout = values['wait-timeout'] === undefined ? undefined : Number(values['wait-timeout']);

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
for (const client of clients) client.on('error', () => {});
await Promise.all(clients.map((c) => c.ping()));
const redlock = new Redlock(clients, { retryCount: Number(values['retry-count']) });
await redlock.trustMembers(); // brand-new masters: no restart quarantine to sit out
await (await redlock.acquire('burst:warm-up', 10_000)).release(); // scripts loaded on every connection

const resources = Array.from({ length: count }, (_, i) => `burst:${i}`);
const started = systemClock.now();
const results = await Promise.allSettled(resources.map((resource) => redlock.acquire(resource, 10_000, waitTimeout === undefined ? {} : { waitTimeout })));
const acquireMs = systemClock.now() - started;

const locks = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
const failures = new Map<string, number>();
for (const result of results) {
  if (result.status === 'fulfilled') continue;
  const error = result.reason as unknown;
  const why = error instanceof LockAcquireError ? `${error.outcome}, ${error.stoppedBecause}, ${error.attempts.length} attempt(s)` : String(error);
  failures.set(why, (failures.get(why) ?? 0) + 1);
}
const releaseStarted = systemClock.now();
const released = await Promise.all(locks.map((lock) => lock.release()));
const releaseMs = systemClock.now() - releaseStarted;
await Promise.all(clients.map((c) => c.ping())); // behind every release
const left = await Promise.all(clients.map((c) => c.exists(...resources)));

console.log(`${count} acquires at once, retryCount ${values['retry-count']}, waitTimeout ${waitTimeout ?? 'default'}:`);
console.log(`  taken ${locks.length}/${count} in ${acquireMs.toFixed(0)} ms`);
for (const [why, n] of failures) console.log(`  failed ${n}: ${why}`);
console.log(
  `  released ${locks.length} in ${releaseMs.toFixed(0)} ms, ${released.filter((r) => r.freed).length} confirmed by a quorum; lock keys left per member: ${JSON.stringify(left)}`,
);

for (const client of clients) client.disconnect();
await redlock.quit();
await set.stop();
