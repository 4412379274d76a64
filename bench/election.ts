/**
 * npm run bench:election [-- --trials 8]
 *
 * Election failover on five local masters: how long from the moment a leader dies (its
 * connections closed: nothing extends or releases its lock any more, as for a SIGKILLed process)
 * until a waiting candidate is elected, for ttl 1 s and 3 s; and, for comparison, a handover by
 * resign() (released: the next in line is told at once).
 *
 * The bound to compare with: the dead leader's lock keys expire on the members about
 * `validity left at the kill + drift` later (validity = ttl − drift − time since its last
 * extension). An expiry publishes nothing, but the first waiter in line comes back when the
 * holder's keys expire on a quorum (the PTTLs its last attempt read: quorum/wait.ts nextTryMs),
 * and others at their next retry, retryDelay ± retryJitter (200 ± 100 ms) later at most; then one
 * round. So failover ≤ validity left + drift + retryDelay + retryJitter + a round (about
 * validity left + drift + a round for the first in line), and never less than the validity left
 * (checked here on every trial; the safety tests assert it too).
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { defaults, driftMs, Redlock } from '../src/index.js';
import { max, median, now, sleep } from './lib.js';

const { values } = parseArgs({ options: { trials: { type: 'string', default: '8' } } });
const trials = Number(values.trials);

const set = await processBackend.start(5);
const connect = () =>
  set.masters.map((m) => {
    const client = new Redis({ host: m.host, port: m.port });
    client.on('error', () => {});
    return client;
  });
const opened: Redis[] = [];
const open = () => {
  const clients = connect();
  opened.push(...clients);
  return clients;
};

try {
  const watcher = new Redlock(open());
  await watcher.trustMembers();
  let round = 0;
  const rows: string[] = [];
  for (const ttl of [1000, 3000]) {
    const failovers: number[] = [];
    const excess: number[] = [];
    const handovers: number[] = [];
    const drift = driftMs(ttl, defaults.driftFactor);
    const bound = (left: number) => left + drift + defaults.retryDelay + defaults.retryJitter + 50;
    let worstOverBound = -Infinity;
    for (let trial = 0; trial < trials; trial++) {
      const name = `bench-election:${ttl}:${++round}`;
      const doomedClients = open();
      const doomed = new Redlock(doomedClients);
      const leadership = await doomed.election(name, { ttl, id: 'doomed' }).campaign();
      const successor = new Redlock(open());
      const next = successor.election(name, { ttl, id: 'next' }).campaign();
      // Kill at a random point of the extension cycle (extensions come every ttl/3).
      await sleep(100 + Math.random() * ttl);
      const left = leadership.lock.remainingMs();
      const killedAt = now();
      for (const client of doomedClients) client.disconnect();
      const after = await next;
      const ms = now() - killedAt;
      failovers.push(ms);
      excess.push(ms - left);
      worstOverBound = Math.max(worstOverBound, ms - bound(left));
      if (ms < left) throw new Error(`elected ${(left - ms).toFixed(1)} ms before the old validity ended`);
      // A handover by resign: the next candidate is told by the release.
      const third = successor.election(name, { ttl, id: 'third' }).campaign();
      await sleep(50);
      const resignedAt = now();
      await after.resign();
      const t = await third;
      handovers.push(now() - resignedAt);
      await t.resign();
      await doomed.quit();
      await successor.quit();
    }
    const f = (xs: number[]) => `p50 ${median(xs).toFixed(0)} ms, max ${max(xs).toFixed(0)} ms`;
    rows.push(
      `ttl ${ttl} ms (${trials} trials): failover after a leader dies ${f(failovers)}; beyond the dead leader's validity ${f(excess)}; ` +
        `bound = validity left + drift ${drift} + retryDelay ${defaults.retryDelay} + jitter ${defaults.retryJitter} + a round (~50): worst trial ${worstOverBound <= 0 ? 'within' : 'OVER'} it by ${Math.abs(worstOverBound).toFixed(0)} ms; ` +
        `handover by resign() ${f(handovers)}`,
    );
  }
  await watcher.quit();
  for (const row of rows) console.log(row);
} finally {
  for (const client of opened) client.disconnect();
  await set.stop();
}
