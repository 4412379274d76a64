/**
 * npm run bench:modules
 *
 * Which modules of src/ one uncontended acquire runs functions in, after warm-up: V8's precise
 * coverage (call counts) is reset, one `redlock.acquire()` runs against five local masters, and
 * every src/ file with a function called in between is listed. Issue 21 asks for at most 12. A
 * reading of the code's shape, not of its speed: nothing here is timed.
 */
import Redis from 'ioredis';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { processBackend } from '../test/harness/process.js';
import { Redlock } from '../src/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
try {
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients); // the defaults: retries, waiting in line
  await redlock.trustMembers();
  // Warm-up: every member's epoch read, scripts loaded, bound copies in place.
  for (let i = 0; i < 200; i++) await (await redlock.acquire(`warm:${i}`, 10_000)).release();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await session.post('Profiler.takePreciseCoverage'); // resets the counts
  const lock = await redlock.acquire('measured', 10_000);
  const { result } = await session.post('Profiler.takePreciseCoverage');
  await lock.release();
  const modules = result
    .filter((script) => script.url.startsWith(`file://${root}src/`) && script.functions.some((fn) => fn.ranges.some((range) => range.count > 0)))
    .map((script) => relative(root, fileURLToPath(script.url)))
    .sort();
  console.log(`one uncontended acquire ran functions in ${modules.length} modules of src/:`);
  for (const module of modules) console.log(`  ${module}`);
} finally {
  for (const client of clients) client.disconnect();
  await set.stop();
  session.disconnect();
}
