/**
 * Markdown for bench/run.ts: one table per figure, the targets with met / missed by how much, and
 * every incident (hangs, errors, expired hand-outs) per client.
 */
import { median } from './lib.js';
import type { FailRow, HandoffRound, Incidents, MemoryResult, PausedRow, ThroughputResult, UncontendedRow } from './figures.js';
import { CLIENTS, type PeerName } from './peers.js';

export interface Results {
  date: string;
  node: string;
  machine: string;
  mode: 'quick' | 'full';
  options: Record<string, unknown>;
  opTimeoutMs: number;
  figures: {
    uncontended?: UncontendedRow[];
    throughput?: ThroughputResult;
    handoff?: HandoffRound[];
    twoPaused?: PausedRow[];
    threePaused?: { rows: FailRow[]; nodeTimeout: number; drain: { drainedMs: number; undrained: number } };
    memory?: MemoryResult;
  };
  failures: Record<string, string>;
  seconds: Record<string, number>;
}

const QL: PeerName = 'quorumlock';

export function report(r: Results): string {
  const hung = `hung (> ${(r.opTimeoutMs / 1000).toFixed(0)} s)`;
  const ms = (n: number | undefined): string => {
    if (n === undefined || Number.isNaN(n)) return '–';
    if (n === Infinity) return hung;
    return `${n < 10 ? n.toFixed(3) : n < 1000 ? n.toFixed(1) : n.toFixed(0)} ms`;
  };
  const x = (a: number | undefined, b: number | undefined): string => {
    if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
    return `${(a / b).toFixed(2)}×`;
  };
  const lines: string[] = [];
  const out = (line = '') => lines.push(line);
  const f = r.figures;

  out(`# quorumlock vs peers: \`npm run bench${r.mode === 'quick' ? ' -- --quick' : ''}\``);
  out();
  out(
    `${r.date}, Node ${r.node}, ${r.machine}. Five local redis-server masters (no persistence), shared by every client; every client has its own ioredis connections and runs with its own default settings. Clients take turns (interleaved per cycle or per slice), so machine noise hits all alike. "raw" is the reference no client can beat: one parallel \`SET NX PX\` round on all 5 decided at the 3rd OK, released by a Lua compare-and-delete decided at the 3rd answer (bench/core.ts). Every single operation is bounded by an outer timeout of ${r.opTimeoutMs} ms: past it, it counts as ${hung}.`,
  );
  out();

  // 1 -------------------------------------------------------------------------------------------
  if (f.uncontended) {
    const rows = f.uncontended;
    const raw = rows.find((row) => row.client === 'raw')!;
    out(`## 1. Uncontended acquire + release, distinct keys, one at a time (ttl 10 s, ${raw.samples} cycles each)`);
    out();
    out('| client | cycle p50 | × raw | cycle p99 | × raw | acquire p50 | × raw | acquire p99 | × raw |');
    out('|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) {
      out(
        `| ${row.client} | ${ms(row.cycleMs.p50)} | ${x(row.cycleMs.p50, raw.cycleMs.p50)} | ${ms(row.cycleMs.p99)} | ${x(row.cycleMs.p99, raw.cycleMs.p99)} | ${ms(row.acquireMs.p50)} | ${x(row.acquireMs.p50, raw.acquireMs.p50)} | ${ms(row.acquireMs.p99)} | ${x(row.acquireMs.p99, raw.acquireMs.p99)} |`,
      );
    }
    out();
  }

  // 2 -------------------------------------------------------------------------------------------
  const tput = (client: string, concurrency: number) =>
    median((f.throughput?.slices ?? []).filter((s) => s.client === client && s.concurrency === concurrency).map((s) => s.perSecond));
  if (f.throughput) {
    const slices = f.throughput.slices;
    const concurrencies = [...new Set(slices.map((s) => s.concurrency))];
    const clients = [...new Set(slices.map((s) => s.client))];
    const rounds = Math.max(...slices.map((s) => s.round));
    out(`## 2. Cycles/s (acquire + release) on distinct keys, N concurrent loops (${rounds} round(s) of interleaved slices; medians)`);
    out();
    out(`| client | ${concurrencies.map((c) => `c = ${c} | × raw`).join(' | ')} |`);
    out(`|---|${concurrencies.map(() => '---|---').join('|')}|`);
    for (const client of clients) {
      out(`| ${client} | ${concurrencies.map((c) => `${tput(client, c).toFixed(0)} | ${x(tput(client, c), tput('raw', c))}`).join(' | ')} |`);
    }
    out();
  }

  // 3 -------------------------------------------------------------------------------------------
  const handoff = (client: string) => {
    const rows = (f.handoff ?? []).filter((h) => h.client === client);
    const m = (pick: (h: HandoffRound) => number) => median(rows.map(pick));
    return {
      rounds: rows.length,
      perSecond: m((h) => h.perSecond),
      toAnotherPct: m((h) => h.toAnotherPct),
      p50: m((h) => h.handoffMs.p50),
      p99: m((h) => h.handoffMs.p99),
      waited50: m((h) => h.waitedMs.p50),
      waited99: m((h) => h.waitedMs.p99),
      top: m((h) => h.topWorkerPct),
      min: m((h) => h.minWorkerPct),
      failed: m((h) => h.failed),
      mostHolders: Math.max(...rows.map((h) => h.mostHolders)),
    };
  };
  if (f.handoff) {
    const first = f.handoff[0];
    out(
      `## 3. Contended handoff: 8 workers (each its own client and connections) on one key, ttl 1 s, 1 ms holds (${first ? handoff(first.client).rounds : 0} round(s) each, interleaved; medians)`,
    );
    out();
    out(
      '"Handoff" runs from the holder\'s first release in its streak (it may take the lock straight back) to another worker holding the lock. No raw column: raw has no way to wait.',
    );
    out();
    out(
      '| client | acquisitions/s | to another worker | handoff p50 | handoff p99 | new holder waited p50 | p99 | top / min worker share | failed acquires | most holders at once |',
    );
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const peer of CLIENTS) {
      const h = handoff(peer.name);
      if (h.rounds === 0) continue;
      out(
        `| ${peer.name} | ${h.perSecond.toFixed(1)} | ${h.toAnotherPct.toFixed(1)} % | ${ms(h.p50)} | ${ms(h.p99)} | ${ms(h.waited50)} | ${ms(h.waited99)} | ${h.top.toFixed(1)} % / ${h.min.toFixed(1)} % | ${h.failed} | ${h.mostHolders} |`,
      );
    }
    for (const peer of CLIENTS)
      if (handoff(peer.name).mostHolders > 1) out(`\n**WARNING:** ${peer.name} let ${handoff(peer.name).mostHolders} workers hold the lock at once.`);
    out();
  }

  // 4 -------------------------------------------------------------------------------------------
  if (f.twoPaused) {
    const rows = f.twoPaused;
    const raw = rows.find((row) => row.client === 'raw')!;
    out(`## 4. Acquire latency with 2 of 5 members paused (SIGSTOP), against the same clients healthy just before`);
    out();
    out(
      `A client is retired from the paused phase after ${r.options.maxTroubled} troubled cycles (an acquire or release that hung, failed or took > 1 s); hung acquires count as ∞ in its percentiles.`,
    );
    out();
    out('| client | healthy p50 | healthy p99 | 2 paused p50 | × raw | 2 paused p99 | × healthy p99 | max | cycles measured / attempted | hung ops |');
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) {
      out(
        `| ${row.client} | ${ms(row.healthy.p50)} | ${ms(row.healthy.p99)} | ${ms(row.paused.p50)} | ${x(row.paused.p50, raw.paused.p50)} | ${ms(row.paused.p99)} | ${x(row.paused.p99, row.healthy.p99)} | ${ms(row.paused.max)} | ${row.paused.samples} / ${row.attempted}${row.retired ? ' (retired)' : ''} | ${row.incidents.hung} |`,
      );
    }
    const drain = rows[0]?.drain;
    if (drain) out(`\nAfter resuming, every connection's queue drained in ${drain.drainedMs.toFixed(0)} ms (${drain.undrained} did not answer).`);
    out();
  }

  // 5 -------------------------------------------------------------------------------------------
  if (f.threePaused) {
    out(`## 5. Time to fail one attempt with 3 of 5 members paused`);
    out();
    out('Every client allows a single attempt, so each runs with its retry count set to 0 (and otherwise its defaults). A hang counts as ∞ in p50 / max.');
    out();
    out('| client | settings | p50 | max | attempts | failed as "could not lock" | hung | acquired (!) | other errors |');
    out('|---|---|---|---|---|---|---|---|---|');
    for (const row of f.threePaused.rows) {
      out(
        `| ${row.client} | ${row.settings} | ${ms(row.p50)} | ${ms(row.max)} | ${row.attempted}${row.retired ? ' (retired)' : ''} | ${row.failMs.length} | ${row.hung} | ${row.acquired} | ${row.otherErrors}${row.firstOtherError ? `: ${row.firstOtherError}` : ''} |`,
      );
    }
    out();
  }

  // 6 -------------------------------------------------------------------------------------------
  if (f.memory) {
    const m = f.memory;
    out(`## 6. quorumlock memory over ${m.cycles.toLocaleString('en-US')} acquire/release cycles (concurrency ${m.concurrency}, distinct keys)`);
    out();
    out(
      `After ${m.warmupCycles.toLocaleString('en-US')} warm-up cycles; sampled every ${m.sampleEvery.toLocaleString('en-US')} cycles${m.gcForced ? ', each after a forced full GC' : ' (no forced GC available)'}; ${m.perSecond.toFixed(0)} cycles/s.`,
    );
    out();
    out('| cycles | RSS | heapUsed | elapsed |');
    out('|---|---|---|---|');
    for (const s of m.samples)
      out(`| ${s.cycles.toLocaleString('en-US')} | ${s.rssMB.toFixed(1)} MB | ${s.heapUsedMB.toFixed(2)} MB | ${s.elapsedS.toFixed(0)} s |`);
    out();
    out(`Growth from the first to the last sample: RSS ${sign(m.rssGrowthMB)} MB, heapUsed ${sign(m.heapGrowthMB)} MB.`);
    out();
  }

  // Targets -------------------------------------------------------------------------------------
  const targets = evaluateTargets(r, ms);
  if (targets.length > 0) {
    out('## Targets (quorumlock; reported, not asserted)');
    out();
    out('| target | measured | verdict |');
    out('|---|---|---|');
    for (const t of targets) out(`| ${t.target} | ${t.measured} | ${t.verdict} |`);
    out();
  }

  // Incidents -----------------------------------------------------------------------------------
  const incidentLines: string[] = [];
  const note = (figure: string, client: string, inc: Incidents) => {
    const parts: string[] = [];
    if (inc.hung) parts.push(`${inc.hung} operation(s) ${hung}`);
    if (inc.errors) parts.push(`${inc.errors} unexpected acquire error(s)`);
    if (inc.releaseErrors) parts.push(`${inc.releaseErrors} release() rejection(s)`);
    if (inc.releaseUnconfirmed) parts.push(`${inc.releaseUnconfirmed} release(s) not confirmed by a quorum`);
    if (inc.expiredAtHandout) parts.push(`${inc.expiredAtHandout} lock(s) handed out with validity ≤ 0 (min ${inc.minValidityMs.toFixed(1)} ms)`);
    if (inc.lateCompletions) parts.push(`${inc.lateCompletions} operation(s) settled after being given up${lateLocks(inc.lateLocks, inc.lateValidityMs)}`);
    if (parts.length) incidentLines.push(`- ${figure}, ${client}: ${parts.join('; ')}${inc.firstError ? `. First: \`${inc.firstError}\`` : ''}`);
  };
  for (const row of f.uncontended ?? []) note('1 uncontended', row.client, row.incidents);
  for (const [client, inc] of Object.entries(f.throughput?.incidents ?? {})) note('2 throughput', client, inc);
  for (const row of f.handoff ?? []) note(`3 handoff round ${row.round}`, row.client, row.incidents);
  for (const row of f.twoPaused ?? []) {
    note('4 healthy phase', row.client, row.healthyIncidents);
    note('4 two paused', row.client, row.incidents);
  }
  for (const row of f.threePaused?.rows ?? []) {
    const parts: string[] = [];
    if (row.hung) parts.push(`${row.hung} acquire(s) ${hung}`);
    if (row.acquired) parts.push(`**${row.acquired} acquire(s) SUCCEEDED with a majority paused**`);
    if (row.otherErrors) parts.push(`${row.otherErrors} other error(s): \`${row.firstOtherError}\``);
    if (row.late.lateCompletions)
      parts.push(
        `${row.late.lateCompletions} settled after being given up (once the masters were resumed)${lateLocks(row.late.lateLocks, row.late.lateValidityMs)}`,
      );
    if (parts.length) incidentLines.push(`- 5 three paused, ${row.client}: ${parts.join('; ')}`);
  }
  if (f.memory) note('6 memory', QL, f.memory.incidents);
  for (const [figure, error] of Object.entries(r.failures)) incidentLines.push(`- figure ${figure} FAILED: \`${error}\``);
  out('## Incidents');
  out();
  if (incidentLines.length === 0) out('None: no hangs, errors, unconfirmed releases or expired hand-outs.');
  for (const line of incidentLines) out(line);
  out();
  out(
    `Run time per figure: ${Object.entries(r.seconds)
      .map(([k, s]) => `${k} ${s.toFixed(0)} s`)
      .join(', ')}.`,
  );
  return lines.join('\n');
}

/** Locks handed out after the outer timeout: how many, and whether the client claimed validity it no longer had. */
function lateLocks(count: number, validity: readonly number[]): string {
  if (count === 0) return '';
  const expired = validity.filter((v) => v <= 0);
  const claimed = validity.map((v) => `${v.toFixed(0)} ms`).join(', ');
  return `, ${count} of them resolving with a lock (claimed validity ${claimed})${expired.length ? `: **${expired.length} handed out already expired** (negative validity)` : ''}`;
}

const sign = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(2)}`;

interface Target {
  target: string;
  measured: string;
  verdict: string;
}

/** met, or missed by how much (as a share of the target). */
function verdict(measured: number, target: number, direction: '≤' | '≥'): string {
  if (!Number.isFinite(measured)) return measured === Infinity && direction === '≤' ? 'missed (hung)' : 'not measured';
  const met = direction === '≤' ? measured <= target : measured >= target;
  if (met) return 'met';
  const byPct = direction === '≤' ? (measured / target - 1) * 100 : (1 - measured / target) * 100;
  return `**missed** by ${byPct.toFixed(0)} % (${direction === '≤' ? 'over' : 'short of'} the target)`;
}

function evaluateTargets(r: Results, ms: (n: number | undefined) => string): Target[] {
  const f = r.figures;
  const targets: Target[] = [];
  if (f.uncontended) {
    const ql = f.uncontended.find((row) => row.client === QL)!;
    const raw = f.uncontended.find((row) => row.client === 'raw')!;
    const ratio = ql.cycleMs.p50 / raw.cycleMs.p50;
    targets.push({
      target: '1. uncontended acquire + release p50 within 1.15× of raw',
      measured: `${ratio.toFixed(2)}× (${ms(ql.cycleMs.p50)} vs ${ms(raw.cycleMs.p50)}); acquire alone ${(ql.acquireMs.p50 / raw.acquireMs.p50).toFixed(2)}×`,
      verdict: verdict(ratio, 1.15, '≤'),
    });
  }
  if (f.throughput) {
    const ours = median(f.throughput.slices.filter((s) => s.client === QL && s.concurrency === 128).map((s) => s.perSecond));
    const theirs = median(f.throughput.slices.filter((s) => s.client === 'node-redlock' && s.concurrency === 128).map((s) => s.perSecond));
    const ratio = ours / theirs;
    targets.push({
      target: "2. at concurrency 128, ≥ 2× node-redlock's cycles/s",
      measured: `${ratio.toFixed(2)}× (${ours.toFixed(0)} vs ${theirs.toFixed(0)} cycles/s)`,
      verdict: verdict(ratio, 2, '≥'),
    });
  }
  if (f.handoff) {
    const p50 = (client: string) => median(f.handoff!.filter((h) => h.client === client).map((h) => h.handoffMs.p50));
    const ratio = p50('node-redlock') / p50(QL);
    targets.push({
      target: '3. contended handoff p50 ≥ 10× faster than node-redlock',
      measured: `${ratio.toFixed(1)}× (${ms(p50(QL))} vs ${ms(p50('node-redlock'))})`,
      verdict: verdict(ratio, 10, '≥'),
    });
  }
  if (f.twoPaused) {
    const ql = f.twoPaused.find((row) => row.client === QL)!;
    const ratio = ql.paused.p99 / ql.healthy.p99;
    targets.push({
      target: '4. with 2 of 5 paused, acquire p99 within 2× of the healthy p99',
      measured: `${ratio.toFixed(2)}× (${ms(ql.paused.p99)} vs ${ms(ql.healthy.p99)} healthy)`,
      verdict: verdict(ratio, 2, '≤'),
    });
  }
  if (f.threePaused) {
    const ql = f.threePaused.rows.find((row) => row.client === QL)!;
    const bound = f.threePaused.nodeTimeout + 10;
    targets.push({
      target: `5. with 3 of 5 paused, one attempt fails within nodeTimeout + 10 ms (${bound} ms)`,
      measured: `max ${ms(ql.max)}, p50 ${ms(ql.p50)} over ${ql.failMs.length} attempts`,
      verdict: verdict(ql.max, bound, '≤') + (Number.isFinite(ql.max) && ql.max > bound && ql.p50 <= bound ? ' at the max (met at p50)' : ''),
    });
  }
  return targets;
}
