/**
 * What the combined chaos scenario records, and the analysis that decides afterwards whether it
 * was safe (combined.ts runs it). Pure functions of the records, so they can be checked on
 * synthetic runs too (combined-check.test.ts).
 */
import type { Lock } from '../../src/index.js';
import { fenceViolations, intervalOf, overlaps, quantile } from './checker.js';

export type FaultKind = 'kill' | 'hold' | 'failover' | 'pause';
export const FAULT_KINDS: readonly FaultKind[] = ['kill', 'hold', 'failover', 'pause'];

export interface FaultCounts {
  kills: number;
  /** Commands written to the member and still unanswered when it was killed: ioredis re-sends them. */
  inFlightAtKill: number;
  holds: number;
  heldMs: number;
  failovers: number;
  failbacks: number;
  /** Full resyncs served by S2 to the demoted S1 (and back), and partial ones. */
  fullResyncs: number;
  partialResyncs: number;
  pauses: number;
  /** Holdings with an extension due inside a pause: how many were still held after it. */
  pausedExtensions: number;
  pausedExtensionsSurvived: number;
  /** Times the schedule could not start the fault it picked (the minority was already impaired, or no extension was due). */
  skipped: number;
  /** Most members impaired at once (never above the minority). */
  maxImpaired: number;
  /**
   * After a restart or a failback, how long (ms, longest and in all) until a fenced holding
   * counted the member again, so that its fence counter was synced: until then it stays impaired.
   */
  longestRepairMs: number;
  repairMs: number;
  /** Members still unrepaired when the run stopped (their fault was cut short). */
  unrepaired: number;
}

export interface CombinedResult {
  scenario: 'combined';
  seed: number;
  seconds: number;
  quarantine: boolean;
  ttl: number;
  maxLockTtl: number;
  clients: number;
  resources: number;
  acquisitions: number;
  /** Of which overran on purpose (no extension, signal ignored). */
  overruns: number;
  /** Successful extensions (quorumlock:extend with extended: true), and failed ones by reason. */
  extensions: number;
  extensionFailures: Record<string, number>;
  /** Holdings whose lock was lost before the work ended, by lostBecause. */
  lost: Record<string, number>;
  failedAcquires: number;
  failedBy: Record<string, number>;
  p50AcquireMs: number;
  p99AcquireMs: number;
  faults: FaultCounts;
  writes: {
    accepted: number;
    refused: number;
    /** Refused writes from holders whose lock was already lost or run out: the fence at work. */
    staleRefused: number;
    /** Writes sent after the holder's lock was lost that the store still accepted: no higher token had reached it yet. */
    lateAccepted: number;
    /**
     * Of those, sent when a successor already held a higher token but had not written with it:
     * the window fencing leaves by design (a store can refuse only tokens below one it has seen).
     */
    lateAcceptedAfterSuccessor: number;
    errors: number;
    /** Accepted writes MONITOR showed on the store: all of them, or the store order check saw only part. */
    seenInStoreOrder: number;
  };
  violations: number;
  overlapViolations: number;
  maxOverlapMs: number;
  /** Fences not strictly increasing in acquire order. */
  fenceViolations: number;
  /** Fences not strictly increasing across holdings in the order the store accepted writes. */
  storeOrderViolations: number;
  /** Writes accepted although a higher token had been accepted before they were sent. */
  staleAccepted: number;
  /** Writes refused although the writer held its lock for the whole round trip. */
  refusedWhileHeld: number;
  /** Holdings without a fence although fencing was asked for. */
  unfenced: number;
  liveness: {
    /** The longest stretch (ms) without any acquisition, from the first acquisition to the stop. */
    longestGapMs: number;
    /** Acquisitions while 0, 1 and 2 members were impaired. */
    byImpaired: number[];
    /** Acquisitions while each kind of fault was under way. */
    duringFault: Record<FaultKind, number>;
    /** Spans between consecutive fault starts, and how many of them saw an acquisition. */
    interFaultSpans: number;
    interFaultSpansWithAcquisition: number;
  };
  /** Each violation with the holdings involved and the faults around it (times in ms from the start). */
  counterexamples: string[];
  /** Every fault, holding and failed acquire, in time order (ms from the start): for reading a run. */
  timeline: string[];
}

/** One holding, as its client saw it. Times are performance.now() readings (one process, one clock). */
export interface Holding {
  id: number;
  client: number;
  resource: string;
  fence: number | undefined;
  overrun: boolean;
  calledAt: number;
  acquiredAt: number;
  /** The deadline last read from the lock (now + remainingMs): moves on with each extension. */
  validUntil: number;
  /** When the lock's signal aborted, and why. */
  lostAt?: number;
  lostBecause?: string;
  /** When the work ended: release() follows at once. */
  releasedAt?: number;
  /** Members (indexes) that voted 'locked' in the acquire. */
  lockedMembers: number[];
  /** The lock, while the holding lasts, for faults that aim at its extensions. */
  lock?: Lock;
}

/** One fencedWrite to the store. */
export interface Write {
  holding: Holding;
  phase: 'start' | 'end';
  sentAt: number;
  doneAt: number;
  accepted: boolean | undefined;
  /** The lock was neither lost nor run out when the write was sent / answered. */
  heldAtSend: boolean;
  heldAtDone: boolean;
}

/** One fault, from when it started acting to when it stopped (quarantine tails not included). */
export interface FaultEvent {
  kind: FaultKind;
  members: number[];
  start: number;
  end: number;
  detail: string;
}

/** Everything a run recorded, and its settings. */
export interface Recorded {
  seed: number;
  seconds: number;
  quarantine: boolean;
  ttl: number;
  maxLockTtl: number;
  clients: number;
  resources: readonly string[];
  t0: number;
  runStart: number;
  stopAt: number;
  holdings: Holding[];
  writes: Write[];
  accepted: { resource: string; holding: number; fence: number }[];
  faultEvents: FaultEvent[];
  /** [time, members impaired from then on], in time order. */
  impaired: readonly [number, number][];
  counts: FaultCounts;
  failedBy: Record<string, number>;
  /** Each acquire that failed: when it gave up, and its outcome. */
  failures: { at: number; client: number; resource: string; outcome: string }[];
  latencies: number[];
  extendMessages: { extended: boolean; reason?: string }[];
}

/** The interval a holding may be relied on: until its work ended, never past its last deadline. */
const holdingInterval = (h: Holding) =>
  intervalOf({ client: h.client, acquiredAt: h.acquiredAt, validUntil: h.validUntil, ...(h.releasedAt === undefined ? {} : { releasedAt: h.releasedAt }) });

export function analyse(run: Recorded): CombinedResult {
  const { holdings, writes, accepted, faultEvents, t0 } = run;
  const ms = (t: number) => Math.round(t - t0);
  const describe = (h: Holding) =>
    `#${h.id} client ${h.client} ${h.resource} fence ${h.fence} acquired ${ms(h.acquiredAt)} (called ${ms(h.calledAt)}) valid until ${ms(h.validUntil)}` +
    `${h.lostAt === undefined ? '' : ` lost ${ms(h.lostAt)} (${h.lostBecause})`} ended ${h.releasedAt === undefined ? '-' : ms(h.releasedAt)}` +
    `${h.overrun ? ' overrun' : ''} locked on [${h.lockedMembers.join(',')}]`;
  const faultsAround = (from: number, to: number) =>
    faultEvents
      .filter((f) => f.end >= from - 3000 && f.start <= to + 500)
      .map((f) => `  fault ${f.kind} on [${f.members.join(',')}] ${ms(f.start)}–${ms(f.end)}: ${f.detail}`);
  const counterexamples: string[] = [];

  // Overlaps and fence order in acquire order, per resource.
  let overlapViolations = 0;
  let maxOverlapMs = 0;
  let fenceOrder = 0;
  for (const resource of run.resources) {
    const mine = holdings.filter((h) => h.resource === resource);
    const result = overlaps(mine.map(holdingInterval));
    overlapViolations += result.count;
    maxOverlapMs = Math.max(maxOverlapMs, result.maxOverlapMs);
    fenceOrder += fenceViolations(mine.flatMap((h) => (h.fence === undefined ? [] : [{ acquiredAt: h.acquiredAt, fence: h.fence }])));
    const sorted = [...mine].sort((a, b) => a.acquiredAt - b.acquiredAt);
    for (let i = 0; i < sorted.length; i++) {
      for (let j = i + 1; j < sorted.length; j++) {
        const [a, b] = [sorted[i]!, sorted[j]!];
        const shared = Math.min(holdingInterval(a).end, holdingInterval(b).end) - b.acquiredAt;
        const fenceWrong = a.fence !== undefined && b.fence !== undefined && b.fence <= a.fence;
        if ((shared > 0 && a.client !== b.client) || (fenceWrong && j === i + 1)) {
          counterexamples.push(
            [
              `${shared > 0 ? `overlap of ${shared.toFixed(1)} ms` : 'fence not increasing in acquire order'} on ${resource}:`,
              `  ${describe(a)}`,
              `  ${describe(b)}`,
              ...faultsAround(a.calledAt, b.releasedAt ?? b.validUntil),
            ].join('\n'),
          );
        }
      }
    }
  }

  // The store's own order: across holdings, fences strictly increase.
  let storeOrderViolations = 0;
  const byId = new Map(holdings.map((h) => [h.id, h]));
  for (const resource of run.resources) {
    const seq = accepted.filter((a) => a.resource === resource);
    for (let i = 1; i < seq.length; i++) {
      const [prev, next] = [seq[i - 1]!, seq[i]!];
      if (prev.holding === next.holding || next.fence > prev.fence) continue;
      storeOrderViolations++;
      const [a, b] = [byId.get(prev.holding), byId.get(next.holding)];
      counterexamples.push(
        [
          `store accepted fence ${next.fence} (holding #${next.holding}) after ${prev.fence} (#${prev.holding}) on ${resource}:`,
          ...[a, b].map((h) => `  ${h ? describe(h) : '?'}`),
          ...faultsAround(Math.min(a?.calledAt ?? Infinity, b?.calledAt ?? Infinity), Math.max(a?.validUntil ?? 0, b?.validUntil ?? 0)),
        ].join('\n'),
      );
    }
  }

  // Client side: a write sent after a higher token was accepted must be refused; a write answered
  // within its holder's validity must not be.
  let staleAccepted = 0;
  let refusedWhileHeld = 0;
  let staleRefused = 0;
  let lateAccepted = 0;
  let lateAcceptedAfterSuccessor = 0;
  for (const w of writes) {
    const fence = w.holding.fence!;
    if (w.accepted === true) {
      const superseded = writes.find(
        (o) => o.accepted === true && o.holding.resource === w.holding.resource && o.holding.fence! > fence && o.doneAt < w.sentAt,
      );
      if (superseded) {
        staleAccepted++;
        counterexamples.push(
          [
            `write accepted after a higher fence was: ${w.phase} of`,
            `  ${describe(w.holding)} sent ${ms(w.sentAt)}`,
            `  after ${describe(superseded.holding)} wrote at ${ms(superseded.doneAt)}`,
          ].join('\n'),
        );
      }
      if (!w.heldAtSend) {
        lateAccepted++;
        if (holdings.some((h) => h.resource === w.holding.resource && h.fence !== undefined && h.fence > fence && h.acquiredAt < w.sentAt))
          lateAcceptedAfterSuccessor++;
      }
    } else if (w.accepted === false) {
      if (!w.heldAtSend || !w.heldAtDone) staleRefused++;
      if (w.heldAtSend && w.heldAtDone) {
        refusedWhileHeld++;
        counterexamples.push(
          [
            `write refused while its holder held the lock (${w.phase}, ${ms(w.sentAt)}–${ms(w.doneAt)}):`,
            `  ${describe(w.holding)}`,
            ...faultsAround(w.holding.calledAt, w.doneAt),
          ].join('\n'),
        );
      }
    }
  }

  const unfenced = holdings.filter((h) => h.fence === undefined).length;
  const violations = overlapViolations + fenceOrder + storeOrderViolations + staleAccepted + refusedWhileHeld + unfenced;

  // Liveness.
  const times = holdings.map((h) => h.acquiredAt).sort((a, b) => a - b);
  let longestGapMs = times.length === 0 ? run.stopAt - run.runStart : 0;
  for (let i = 1; i <= times.length; i++) longestGapMs = Math.max(longestGapMs, (times[i] ?? run.stopAt) - times[i - 1]!);
  const byImpaired = [0, 0, 0];
  const impairedAt = (t: number) => {
    let count = 0;
    for (const [time, n] of run.impaired) {
      if (time > t) break;
      count = n;
    }
    return count;
  };
  for (const t of times) byImpaired[Math.min(2, impairedAt(t))]!++;
  const duringFault: Record<FaultKind, number> = { kill: 0, hold: 0, failover: 0, pause: 0 };
  for (const kind of FAULT_KINDS) duringFault[kind] = times.filter((t) => faultEvents.some((f) => f.kind === kind && f.start <= t && t <= f.end)).length;
  const starts = faultEvents.map((f) => f.start).sort((a, b) => a - b);
  let interFaultSpansWithAcquisition = 0;
  for (let i = 0; i < starts.length; i++) {
    const [from, to] = [starts[i]!, starts[i + 1] ?? run.stopAt];
    if (times.some((t) => t >= from && t < to)) interFaultSpansWithAcquisition++;
  }

  const lost: Record<string, number> = {};
  for (const h of holdings)
    if (h.lostAt !== undefined && (h.releasedAt === undefined || h.lostAt <= h.releasedAt)) lost[h.lostBecause ?? '?'] = (lost[h.lostBecause ?? '?'] ?? 0) + 1;
  const extensionFailures: Record<string, number> = {};
  for (const m of run.extendMessages) if (!m.extended) extensionFailures[m.reason ?? '?'] = (extensionFailures[m.reason ?? '?'] ?? 0) + 1;

  return {
    scenario: 'combined',
    seed: run.seed,
    seconds: run.seconds,
    quarantine: run.quarantine,
    ttl: run.ttl,
    maxLockTtl: run.maxLockTtl,
    clients: run.clients,
    resources: run.resources.length,
    acquisitions: holdings.length,
    overruns: holdings.filter((h) => h.overrun).length,
    extensions: run.extendMessages.filter((m) => m.extended).length,
    extensionFailures,
    lost,
    failedAcquires: Object.values(run.failedBy).reduce((a, b) => a + b, 0),
    failedBy: run.failedBy,
    p50AcquireMs: quantile(run.latencies, 0.5),
    p99AcquireMs: quantile(run.latencies, 0.99),
    faults: run.counts,
    writes: {
      accepted: writes.filter((w) => w.accepted === true).length,
      refused: writes.filter((w) => w.accepted === false).length,
      staleRefused,
      lateAccepted,
      lateAcceptedAfterSuccessor,
      errors: writes.filter((w) => w.accepted === undefined).length,
      seenInStoreOrder: accepted.length,
    },
    violations,
    overlapViolations,
    maxOverlapMs,
    fenceViolations: fenceOrder,
    storeOrderViolations,
    staleAccepted,
    refusedWhileHeld,
    unfenced,
    liveness: { longestGapMs: Math.round(longestGapMs), byImpaired, duringFault, interFaultSpans: starts.length, interFaultSpansWithAcquisition },
    counterexamples,
    timeline: timelineOf(run, describe),
  };
}

function timelineOf(run: Recorded, describe: (h: Holding) => string): string[] {
  const ms = (t: number) => Math.round(t - run.t0);
  const lines: [number, string][] = [
    ...run.faultEvents.map((f): [number, string] => [f.start, `${ms(f.start)} fault ${f.kind} on [${f.members.join(',')}] until ${ms(f.end)}: ${f.detail}`]),
    ...run.holdings.map((h): [number, string] => [h.acquiredAt, `${ms(h.acquiredAt)} holding ${describe(h)}`]),
    ...run.failures.map((f): [number, string] => [f.at, `${ms(f.at)} acquire failed: client ${f.client} ${f.resource} ${f.outcome}`]),
  ];
  return lines.sort((a, b) => a[0] - b[0]).map(([, line]) => line);
}
