/**
 * Markdown for bench/run.ts: one table per figure, the targets with met / missed by how much, and
 * every incident (hangs, errors, expired hand-outs) per client.
 */
import { median } from './lib.js';
import {
  HOLD_TTL,
  scriptTotals,
  WORKERS,
  type FailRow,
  type HandoffRound,
  type Incidents,
  type MemoryResult,
  type PausedRow,
  type ServerTimeResult,
  type ServerWindow,
  type ThroughputResult,
  type UncontendedRow,
} from './figures.js';
import { CLIENTS, HANDOFF_FLOOR, LINE_HANDOFF_FLOOR, type PeerName } from './peers.js';

/** The reference with quorumlock's per-call checks (peers.ts): what bounds a missed target. */
const CHECKED: PeerName = 'checked floor';

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
    serverTime?: ServerTimeResult;
    /** 8: quorumlock over each client library, and redlock-universal over its adapters. */
    libraries?: { uncontended: UncontendedRow[]; throughput: ThroughputResult };
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
  const slicesOf = (client: string, concurrency: number) => (f.throughput?.slices ?? []).filter((s) => s.client === client && s.concurrency === concurrency);
  const tput = (client: string, concurrency: number) => median(slicesOf(client, concurrency).map((s) => s.perSecond));
  const failedAt = (client: string, concurrency: number) => slicesOf(client, concurrency).reduce((sum, s) => sum + s.failed, 0);
  const cpuAt = (client: string, concurrency: number) => median(slicesOf(client, concurrency).map((s) => s.cpuPerCycleUs));
  const levels = [...new Set((f.throughput?.slices ?? []).map((s) => s.concurrency))];
  if (f.throughput) {
    const slices = f.throughput.slices;
    const clients = [...new Set(slices.map((s) => s.client))];
    const rounds = Math.max(...slices.map((s) => s.round));
    out(`## 2. Cycles/s (acquire + release) on distinct keys, N concurrent loops (${rounds} round(s) of interleaved slices; medians)`);
    out();
    out(
      `One client at a time runs N loops of acquire → release on fresh keys; clients take turns slice by slice. The loops start together, so a slice counts only once every loop has finished its first cycle (they have spread out by then): cycles completed in the next ${((r.options.throughput as { sliceMs?: number } | undefined)?.sliceMs ?? NaN) / 1000} s (up to the first completion after it), per second of that window. "failed": acquires of the whole slice (ramp and drain included) that rejected (any error, "could not lock" included) or hung (> ${r.opTimeoutMs / 1000} s), summed over the rounds. Raw is the floor for one cycle's latency, not a ceiling here: it writes every command on its own, and a client that batches a tick's commands into one write per connection can pass it under concurrency.`,
    );
    out();
    out(`| client | ${levels.map((c) => `c = ${c} | × raw | failed`).join(' | ')} |`);
    out(`|---|${levels.map(() => '---|---|---').join('|')}|`);
    for (const client of clients) {
      out(`| ${client} | ${levels.map((c) => `${tput(client, c).toFixed(0)} | ${x(tput(client, c), tput('raw', c))} | ${failedAt(client, c)}`).join(' | ')} |`);
    }
    out();
    out(
      `Client CPU per completed cycle, in µs: \`process.cpuUsage()\` (user + system) of the bench process over the same window, ÷ the cycles completed in it (medians over rounds). Only one client runs in a slice, but the bench's own work (bounded operations, their timers, the loops) is in every row: the raw row is that floor plus raw's commands.`,
    );
    out();
    out(`| client | ${levels.map((c) => `c = ${c} | × raw`).join(' | ')} |`);
    out(`|---|${levels.map(() => '---|---').join('|')}|`);
    for (const client of clients) {
      out(`| ${client} | ${levels.map((c) => `${cpuAt(client, c).toFixed(0)} µs | ${x(cpuAt(client, c), cpuAt('raw', c))}`).join(' | ')} |`);
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
      `## 3. Contended handoff: 8 workers (each its own client and connections) on one key, ttl ${((r.options.handoff as { ttl?: number } | undefined)?.ttl ?? NaN) / 1000} s, 1 ms holds (${first ? handoff(first.client).rounds : 0} round(s) each, interleaved; medians)`,
    );
    out();
    out(
      '"Handoff" runs from the holder\'s first release in its streak (it may take the lock straight back) to another worker holding the lock. No raw column: raw has no way to wait. The hand-off floor is the reference instead: a FIFO line kept in the bench process, and a release that sets the next waiter\'s value and publishes to it on all 5 in one script round, the waiter holding it at the 3rd message (bench/peers.ts). Waiters in several processes cannot share a line kept in one: the line hand-off floor keeps it on the members (a ZSET by ticket, which each refused attempt joins and each release pops), with the reads of the per-call checks in each script, and nothing else (no lease, presence, hand-over request or quarantine). It is the least a hand-over with its line on the members costs here.',
    );
    out();
    out(
      '| client | acquisitions/s | to another worker | handoff p50 | handoff p99 | new holder waited p50 | p99 | top / min worker share | failed acquires | most holders at once |',
    );
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const peer of [...CLIENTS, HANDOFF_FLOOR, LINE_HANDOFF_FLOOR]) {
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

  // 7 -------------------------------------------------------------------------------------------
  if (f.serverTime) {
    const rows = f.serverTime.rows;
    const raw = rows.find((row) => row.client === 'raw');
    const us = (n: number) => (Number.isFinite(n) ? `${n < 100 ? n.toFixed(1) : n.toFixed(0)} µs` : '–');
    const per = (w: ServerWindow, n: number) => (w.ops > 0 ? n / w.ops : NaN);
    const topCalls = (w: ServerWindow) => Object.values(w.commands).reduce((sum, c) => sum + c.calls * (1 - c.innerShare), 0);
    const scripts = (w: ServerWindow) => {
      const t = scriptTotals(w);
      return { perOp: per(w, t.calls), perCall: t.calls > 0 ? t.usec / t.calls : NaN };
    };
    out(`## 7. Server time per call: each client alone on the 5 masters (${raw?.cycles.ops ?? rows[0]?.cycles.ops ?? 0} cycles each, INFO commandstats)`);
    out();
    out(
      `For one client at a time (nothing else connected but the bench's own admin connection): CONFIG RESETSTAT on all 5 masters, N uncontended acquire + release cycles one at a time, then INFO commandstats of every member, summed over the 5 (so "per cycle" is the cost on all members together). "Server µs" sums the usec of the commands the client sent; a script's inner commands (\`redis.call\`) run inside the script's own usec, and commandstats lists them a second time under their own names: a short MONITOR run before the window tells the two apart (its "lua" source), and "as listed" is the plain sum with those counted twice. "Server CPU" is redis-server's main-thread CPU (INFO cpu) over the window, less an empty window's (${us(f.serverTime.emptyWindowCpuUs)}): command time plus reading, parsing and replying. Script calls: eval, evalsha, fcall (and their _ro forms).`,
    );
    out();
    out(
      '| client | server µs per cycle | × raw | commands per cycle | script calls per cycle | µs per script call | server CPU per cycle | × raw | commandstats as listed | heaviest commands (calls per cycle × µs per call) |',
    );
    out('|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) {
      const w = row.cycles;
      const sc = scripts(w);
      const heaviest = Object.entries(w.commands)
        .sort((a, b) => b[1].usec - a[1].usec)
        .slice(0, 4)
        .map(([name, c]) => {
          const where = c.innerShare >= 0.995 ? ' in scripts' : c.innerShare > 0.005 ? ` (${(100 * c.innerShare).toFixed(0)} % in scripts)` : '';
          return `${name} ${per(w, c.calls).toFixed(1)} × ${(c.usec / c.calls).toFixed(1)} µs${where}`;
        })
        .join('; ');
      out(
        `| ${row.client}${row.calibrated ? '' : ' (no MONITOR split)'} | ${us(per(w, w.topLevelUs))} | ${raw ? x(per(w, w.topLevelUs), per(raw.cycles, raw.cycles.topLevelUs)) : '–'} | ${per(w, topCalls(w)).toFixed(1)} | ${sc.perOp.toFixed(1)} | ${us(sc.perCall)} | ${us(per(w, w.cpuUs))} | ${raw ? x(per(w, w.cpuUs), per(raw.cycles, raw.cycles.cpuUs)) : '–'} | ${us(per(w, w.allUs))} | ${heaviest} |`,
      );
    }
    out();
    out(
      `Acquire and release apart: N acquires one at a time, each lock held (ttl ${HOLD_TTL / 1000} s), commandstats read; then RESETSTAT and the N releases. "Script calls per acquire" counts every member's (5 per round when every member is asked).`,
    );
    out();
    out(
      '| client | server µs per acquire | script calls per acquire | µs per acquire script call | server µs per release | script calls per release | µs per release script call |',
    );
    out('|---|---|---|---|---|---|---|');
    for (const row of rows) {
      const a = scripts(row.acquire);
      const rel = scripts(row.release);
      out(
        `| ${row.client} | ${us(per(row.acquire, row.acquire.topLevelUs))} | ${a.perOp.toFixed(1)} | ${us(a.perCall)} | ${us(per(row.release, row.release.topLevelUs))} | ${rel.perOp.toFixed(1)} | ${us(rel.perCall)} |`,
      );
    }
    out();
  }

  // 8 -------------------------------------------------------------------------------------------
  if (f.libraries) libraries(f.libraries, { out, ms, x });

  // Targets -------------------------------------------------------------------------------------
  const targets = evaluateTargets(r, ms);
  if (targets.length > 0) {
    out('## Targets (1–5: issue 24; 6–8: issue 12; quorumlock; reported, not asserted)');
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
  for (const row of f.serverTime?.rows ?? []) {
    note('7 server time', row.client, row.incidents);
    if (!row.calibrated)
      incidentLines.push(`- 7 server time, ${row.client}: the MONITOR run did not finish on every member; its scripts' inner commands are counted twice`);
  }
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

/**
 * Whether the checked floor, measured in the same run, misses what quorumlock misses: then the
 * per-call checks alone rule the target out on this machine (bounded); if the floor meets it,
 * what quorumlock misses it by is its own work (not bounded).
 */
function bound(floorMisses: boolean | undefined): string {
  if (floorMisses === undefined) return `; the ${CHECKED} is not comparable here`;
  return floorMisses ? `; bounded: the ${CHECKED} misses it too` : `; **not bounded**: the ${CHECKED} meets it`;
}

/** `misses(...values)` when every value was measured (finite), else undefined: missing data bounds nothing. */
const ifMeasured = (misses: (...values: number[]) => boolean, ...values: (number | undefined)[]): boolean | undefined =>
  values.every((value) => value !== undefined && Number.isFinite(value)) ? misses(...(values as number[])) : undefined;

function evaluateTargets(r: Results, ms: (n: number | undefined) => string): Target[] {
  const f = r.figures;
  const targets: Target[] = [];
  const peers = CLIENTS.map((p) => p.name).filter((name) => name !== QL);
  const missedAt = (levels: number[]) => levels.map((c) => `c = ${c}`).join(', ');

  if (f.uncontended) {
    const rows = f.uncontended;
    const ql = rows.find((row) => row.client === QL)!;
    const raw = rows.find((row) => row.client === 'raw')!;
    const checked = rows.find((row) => row.client === CHECKED);
    const ratio = ql.cycleMs.p50 / raw.cycleMs.p50;
    const best = rows.filter((row) => peers.includes(row.client)).sort((a, b) => a.cycleMs.p50 - b.cycleMs.p50)[0];
    const toBest = best ? ql.cycleMs.p50 / best.cycleMs.p50 : NaN;
    const misses: string[] = [];
    const floorP50 = checked?.cycleMs.p50;
    if (!Number.isFinite(ratio)) misses.push('not measured');
    else if (!(ratio <= 1.25))
      misses.push(
        `${((ratio / 1.25 - 1) * 100).toFixed(0)} % over 1.25× raw${bound(ifMeasured((floor, ref) => floor / ref > 1.25, floorP50, raw.cycleMs.p50))}`,
      );
    if (best && Number.isFinite(toBest) && !(toBest <= 1.1))
      misses.push(`${toBest.toFixed(2)}× ${best.client}${bound(ifMeasured((floor, ref) => floor / ref > 1.1, floorP50, best.cycleMs.p50))}`);
    targets.push({
      target: '1. uncontended acquire + release p50 ≤ 1.25× raw and ≤ 1.10× the fastest peer',
      measured: `${ratio.toFixed(2)}× raw (${ms(ql.cycleMs.p50)} vs ${ms(raw.cycleMs.p50)}); fastest peer ${best ? `${best.client} ${ms(best.cycleMs.p50)} (${(best.cycleMs.p50 / raw.cycleMs.p50).toFixed(2)}× raw; quorumlock ${toBest.toFixed(2)}× it)` : '–'}${checked ? `; ${CHECKED} ${ms(checked.cycleMs.p50)} (${(checked.cycleMs.p50 / raw.cycleMs.p50).toFixed(2)}× raw; quorumlock ${(ql.cycleMs.p50 / checked.cycleMs.p50).toFixed(2)}× it)` : ''}`,
      verdict: misses.length ? `**missed**: ${misses.join('; ')}` : 'met',
    });
  }

  if (f.throughput) {
    const slices = f.throughput.slices;
    const levels = [...new Set(slices.map((s) => s.concurrency))];
    const at = (client: string, c: number) => slices.filter((s) => s.client === client && s.concurrency === c);
    const perSecond = (client: string, c: number) => median(at(client, c).map((s) => s.perSecond));
    const failed = (client: string, c: number) => at(client, c).reduce((sum, s) => sum + s.failed, 0);
    const cpu = (client: string, c: number) => median(at(client, c).map((s) => s.cpuPerCycleUs));
    // c = 1: at least 0.9× the best peer; c = 128 and 512: at least the best peer; other levels reported.
    const floorOf = (c: number) => (c === 1 ? 0.9 : c >= 128 ? 1 : undefined);
    const slow: number[] = [];
    const slowBounds: string[] = [];
    const failing: number[] = [];
    const measured = levels.map((c) => {
      const best = peers.map((name) => ({ name, value: perSecond(name, c) })).sort((a, b) => b.value - a.value)[0]!;
      const ours = perSecond(QL, c);
      const floor = floorOf(c);
      const floorRate = perSecond(CHECKED, c);
      if (floor !== undefined && !(ours >= floor * best.value)) {
        slow.push(c);
        slowBounds.push(`c = ${c}${bound(failed(CHECKED, c) > 0 ? undefined : ifMeasured((rate, ref) => rate < floor * ref, floorRate, best.value))}`);
      }
      if (failed(QL, c) > 0) failing.push(c);
      const checkedNote = Number.isFinite(floorRate) ? `; ${CHECKED} ${floorRate.toFixed(0)}, quorumlock ${(ours / floorRate).toFixed(2)}× it` : '';
      return `c = ${c}: ${(ours / best.value).toFixed(2)}× best peer (${ours.toFixed(0)} vs ${best.name} ${best.value.toFixed(0)}), ${failed(QL, c)} failed${checkedNote}`;
    });
    const misses = [slow.length ? `short at ${slowBounds.join(' · ')}` : '', failing.length ? `failed acquires at ${missedAt(failing)}` : ''].filter(Boolean);
    targets.push({
      target: '2. cycles/s: c = 1 ≥ 0.9× the best peer, c = 128 and 512 ≥ the best peer (others reported), zero failed acquires at every level',
      measured: measured.join('; '),
      verdict: misses.length ? `**missed**: ${misses.join('; ')}` : 'met',
    });

    const over: string[] = [];
    const cpuMeasured = levels.map((c) => {
      const ours = cpu(QL, c);
      const theirs = cpu('node-redlock', c);
      const floorCpu = cpu(CHECKED, c);
      if ((c === 1 || c === 512) && !(ours <= theirs)) over.push(`c = ${c}${bound(ifMeasured((floorUs, ref) => floorUs > ref, floorCpu, theirs))}`);
      return `c = ${c}: ${ours.toFixed(0)} vs ${theirs.toFixed(0)} µs (${(ours / theirs).toFixed(2)}×${Number.isFinite(floorCpu) ? `; ${CHECKED} ${floorCpu.toFixed(0)} µs` : ''})`;
    });
    targets.push({
      target: "3. client CPU per cycle ≤ node-redlock 4's at c = 1 and c = 512 (process.cpuUsage of the bench process, one client at a time; others reported)",
      measured: cpuMeasured.join('; '),
      verdict: over.length ? `**missed** at ${over.join(' · ')}` : 'met',
    });
  }

  if (f.serverTime) {
    const perCall = (client: PeerName, phase: 'acquire' | 'release') => {
      const row = f.serverTime!.rows.find((row) => row.client === client);
      const scripts = row ? scriptTotals(row[phase]) : undefined;
      return scripts && scripts.calls > 0 ? scripts.usec / scripts.calls : NaN;
    };
    for (const phase of ['acquire', 'release'] as const) {
      const ours = perCall(QL, phase);
      const theirs = perCall('node-redlock', phase);
      const floorCall = perCall(CHECKED, phase);
      const checkedNote = Number.isFinite(floorCall)
        ? `; ${CHECKED} ${floorCall.toFixed(1)} µs (${(floorCall / theirs).toFixed(2)}× node-redlock's; quorumlock ${(ours / floorCall).toFixed(2)}× it)`
        : '';
      const missed = Number.isFinite(ours / theirs) && !(ours / theirs <= 1.3);
      targets.push({
        target: `4. server time per ${phase} script call (INFO commandstats) ≤ 1.3× node-redlock's`,
        measured: `${ours.toFixed(1)} vs ${theirs.toFixed(1)} µs (${(ours / theirs).toFixed(2)}×)${checkedNote}`,
        verdict: verdict(ours / theirs, 1.3, '≤') + (missed ? bound(ifMeasured((floorUs, ref) => floorUs / ref > 1.3, floorCall, theirs)) : ''),
      });
    }
  }

  if (f.handoff) {
    const rows = (client: string) => f.handoff!.filter((h) => h.client === client);
    const m = (client: string, pick: (h: HandoffRound) => number) => median(rows(client).map(pick));
    const p50 = m(QL, (h) => h.handoffMs.p50);
    const lineFloor = m(LINE_HANDOFF_FLOOR.name, (h) => h.handoffMs.p50);
    const ttl = (r.options.handoff as { ttl?: number } | undefined)?.ttl;
    targets.push({
      target: `5. contended handoff (${WORKERS} workers, one key, 1 ms holds, ttl ${ttl === undefined ? '?' : ttl / 1000} s) p50 ≤ 0.5 ms, FIFO-fair`,
      measured: `p50 ${ms(p50)} (node-redlock ${ms(m('node-redlock', (h) => h.handoffMs.p50))}; ${HANDOFF_FLOOR.name} ${ms(m(HANDOFF_FLOOR.name, (h) => h.handoffMs.p50))}; ${LINE_HANDOFF_FLOOR.name} ${ms(lineFloor)}); top / min worker share ${m(QL, (h) => h.topWorkerPct).toFixed(1)} % / ${m(QL, (h) => h.minWorkerPct).toFixed(1)} % (even: ${(100 / WORKERS).toFixed(1)} %; node-redlock ${m('node-redlock', (h) => h.topWorkerPct).toFixed(1)} % / ${m('node-redlock', (h) => h.minWorkerPct).toFixed(1)} %), ${m(QL, (h) => h.toAnotherPct).toFixed(1)} % of acquisitions to another worker`,
      verdict: `${verdict(p50, 0.5, '≤')} (p50)${p50 > 0.5 && Number.isFinite(lineFloor) ? `; ${lineFloor > 0.5 ? 'bounded' : '**not bounded**'}: the ${LINE_HANDOFF_FLOOR.name} is ${ms(lineFloor)}, quorumlock ${(p50 / lineFloor).toFixed(2)}× it` : ''}; shares reported`,
    });
  }

  if (f.memory) {
    const mem = f.memory;
    const first = mem.samples[0];
    const last = mem.samples[mem.samples.length - 1];
    targets.push({
      target: '6. memory: flat RSS over 1,000,000 cycles (figure 6)',
      measured: `RSS ${first?.rssMB.toFixed(1)} → ${last?.rssMB.toFixed(1)} MB (${sign(mem.rssGrowthMB)} MB), heapUsed ${sign(mem.heapGrowthMB)} MB over ${mem.cycles.toLocaleString('en-US')} cycles; 10,000 locks held at once is not measured by this bench`,
      verdict: 'reported',
    });
  } else {
    targets.push({
      target: '6. memory: flat RSS over 1,000,000 cycles (figure 6)',
      measured: 'figure 6 not run (full run, or --rss)',
      verdict: 'not measured',
    });
  }

  // The paused-member targets, as before.
  if (f.twoPaused) {
    const ql = f.twoPaused.find((row) => row.client === QL)!;
    const ratio = ql.paused.p99 / ql.healthy.p99;
    targets.push({
      target: '7. with 2 of 5 paused, acquire p99 within 2× of the healthy p99',
      measured: `${ratio.toFixed(2)}× (${ms(ql.paused.p99)} vs ${ms(ql.healthy.p99)} healthy)`,
      verdict: verdict(ratio, 2, '≤'),
    });
  }
  if (f.threePaused) {
    const ql = f.threePaused.rows.find((row) => row.client === QL)!;
    const bound = f.threePaused.nodeTimeout + 10;
    targets.push({
      target: `8. with 3 of 5 paused, one attempt fails within nodeTimeout + 10 ms (${bound} ms)`,
      measured: `max ${ms(ql.max)}, p50 ${ms(ql.p50)} over ${ql.failMs.length} attempts`,
      verdict: verdict(ql.max, bound, '≤') + (Number.isFinite(ql.max) && ql.max > bound && ql.p50 <= bound ? ' at the max (met at p50)' : ''),
    });
  }
  return targets;
}

/** Figure 8: one table, each contender's uncontended cycle and its cycles/s and CPU per cycle at each level. */
function libraries(
  { uncontended, throughput }: NonNullable<Results['figures']['libraries']>,
  { out, ms, x }: { out: (line?: string) => void; ms: (n: number | undefined) => string; x: (a: number | undefined, b: number | undefined) => string },
): void {
  const base = uncontended.find((row) => row.client === 'quorumlock · ioredis');
  const slicesOf = (client: string, c: number) => throughput.slices.filter((s) => s.client === client && s.concurrency === c);
  const levels = [...new Set(throughput.slices.map((s) => s.concurrency))];
  const perSecond = (client: string, c: number) => median(slicesOf(client, c).map((s) => s.perSecond));
  const cpu = (client: string, c: number) => median(slicesOf(client, c).map((s) => s.cpuPerCycleUs));
  const failed = (client: string) => throughput.slices.filter((s) => s.client === client).reduce((sum, s) => sum + s.failed, 0);
  out(`## 8. Client libraries: quorumlock over each, and redlock-universal over its own adapters (${base?.samples ?? 0} uncontended cycles each)`);
  out();
  out(
    "Each contender opens its own clients to the 5 masters with the library's defaults (node-redis 6 speaks RESP3, node-redis 5 RESP2; GLIDE keeps its 250 ms request timeout); contenders take turns per cycle and per slice. × is against quorumlock over ioredis. Cycles/s and client CPU µs per cycle as in figure 2 (medians of the slices).",
  );
  out();
  out(`| contender | cycle p50 | × | acquire p50 | ${levels.map((c) => `c = ${c} /s | CPU µs`).join(' | ')} | failed |`);
  out(`|---|---|---|---|${levels.map(() => '---|---').join('|')}|---|`);
  for (const row of uncontended) {
    const client = row.client;
    out(
      `| ${client} | ${ms(row.cycleMs.p50)} | ${x(row.cycleMs.p50, base?.cycleMs.p50)} | ${ms(row.acquireMs.p50)} | ${levels.map((c) => `${perSecond(client, c).toFixed(0)} | ${cpu(client, c).toFixed(0)}`).join(' | ')} | ${failed(client)} |`,
    );
  }
  out();
}
