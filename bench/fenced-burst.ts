/**
 * npx tsx bench/fenced-burst.ts
 *
 * Concurrent fenced acquires of distinct resources on five local masters (10, 50, 200 at once):
 * how many get a token. Fence counters are per resource, so holders of different resources do
 * not race for one value (a shared counter made 197 of 200 fail 'unfenced').
 */
import Redis from 'ioredis';
import { processBackend } from '../test/harness/process.js';
import { Redlock } from '../src/index.js';

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
await Promise.all(clients.map((c) => c.ping()));
const redlock = new Redlock(clients, { retryCount: 0 });
await redlock.trustMembers();
for (const count of [10, 50, 200]) {
  const outcomes: Record<string, number> = {};
  const results = await Promise.allSettled(Array.from({ length: count }, (_, i) => redlock.acquire(`fenced-burst:${count}:${i}`, 5_000, { fencing: true })));
  for (const result of results) {
    const outcome = result.status === 'fulfilled' ? 'fenced' : ((result.reason as { outcome?: string }).outcome ?? String(result.reason));
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (result.status === 'fulfilled') await result.value.release();
  }
  console.log(`${count} concurrent fenced acquires of distinct resources: ${JSON.stringify(outcomes)}`);
}
for (const client of clients) client.disconnect();
await set.stop();
