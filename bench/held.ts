/**
 * npm run bench:held [-- --locks 10000] [--ttl 6000] [--seconds 20]
 *
 * Many locks held at once by one process, each kept extended by using(): how much memory they
 * take, how many Node timers they keep, and how late the event loop runs while their extensions
 * go on. Five local masters; every lock's work waits for the end of the run.
 */
import Redis from 'ioredis';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { Redlock } from '../src/index.js';

const { values } = parseArgs({
  options: { locks: { type: 'string', default: '10000' }, ttl: { type: 'string', default: '6000' }, seconds: { type: 'string', default: '20' } },
});
const locks = Number(values.locks);
const ttl = Number(values.ttl);
const seconds = Number(values.seconds);

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
const gc = (globalThis as { gc?: () => void }).gc;

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
try {
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients, { maxLockTtl: Math.max(60_000, ttl) });
  await redlock.trustMembers();
  gc?.();
  const before = process.memoryUsage();
  const timersBefore = timers();
  let finish!: () => void;
  const end = new Promise<void>((resolve) => (finish = resolve));
  let held = 0;
  let lost = 0;
  const started = performance.now();
  const runs: Promise<unknown>[] = [];
  // Acquire in batches of 500, so the acquires themselves do not time out in one burst.
  for (let i = 0; i < locks; i += 500) {
    const batch = Array.from({ length: Math.min(500, locks - i) }, (_, k) =>
      redlock.using(`held:${i + k}`, ttl, async (signal) => {
        held++;
        signal.addEventListener('abort', () => lost++, { once: true });
        await end;
      }),
    );
    runs.push(...batch.map((run) => run.catch(() => lost++)));
    while (held < i + batch.length && performance.now() - started < 60_000) await new Promise((r) => setTimeout(r, 5));
  }
  const acquiredMs = performance.now() - started;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  delay.disable();
  gc?.();
  const during = process.memoryUsage();
  const timersDuring = timers();
  finish();
  await Promise.all(runs);
  console.log(
    `${held} locks held via using() (ttl ${ttl} ms, so each is extended every ~${Math.round((ttl * 2) / 3)} ms), acquired in ${(acquiredMs / 1000).toFixed(1)} s; ${lost} lost`,
  );
  console.log(
    `RSS ${mb(before.rss)} → ${mb(during.rss)} (+${mb(during.rss - before.rss)}), heap used ${mb(before.heapUsed)} → ${mb(during.heapUsed)} (+${((during.heapUsed - before.heapUsed) / held).toFixed(0)} B per lock)`,
  );
  console.log(`Node timers: ${timersBefore} → ${timersDuring} while held`);
  console.log(
    `event-loop delay over ${seconds} s of extensions: p50 ${(delay.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms`,
  );
} finally {
  for (const client of clients) client.disconnect();
  await set.stop();
}
