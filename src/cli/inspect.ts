/** `status`, `members` and `trust`: read-only views of the member set, and the operator's trust step. */
import { sameServerAs } from '../errors.js';
import { Redlock, quorumOf, systemClock } from '../index.js';
import { formatMs } from './duration.js';
import { EXIT } from './errors.js';
import { connect, type MemberUrl, type Tls } from './members.js';
import { healthy, probe } from './probe.js';
import type { EpochState, MemberProbe } from './readings.js';
import { table } from './table.js';
import { quarantineAdvice, trustWarning } from './trust-check.js';

export interface InspectOptions {
  members: MemberUrl[];
  json: boolean;
  timeoutMs: number;
  maxLockTtl: number;
  /** --quarantine-from-restart: report each quarantine as such a client sees it. */
  quarantine: true | 'from-restart';
  tls: Tls;
  out: (text: string) => void;
  /** Warnings (stderr). */
  err: (text: string) => void;
}

/** Resolves, for every caller, once `count` callers have arrived. */
function barrier(count: number): () => Promise<void> {
  let left = count;
  let release: () => void = () => {};
  const all = new Promise<void>((resolve) => (release = resolve));
  return () => {
    if (--left <= 0) release();
    return all;
  };
}

// Not a round (quorum/round.ts): connection and server state (PING, INFO, TIME, epoch hashes) on one-off clients, for the operator's report.
async function probeAll(options: InspectOptions, extra: { resource?: string; info?: boolean }): Promise<MemberProbe[]> {
  const connected = connect(options.members, { commandTimeoutMs: options.timeoutMs, connectTimeoutMs: options.timeoutMs }, options.tls);
  const pinged = barrier(connected.clients.length);
  try {
    const probes = await Promise.all(
      connected.clients.map((client, index) =>
        probe(client, options.members[index]!.name, {
          maxLockTtl: options.maxLockTtl,
          fromRestart: options.quarantine === 'from-restart',
          timeoutMs: options.timeoutMs,
          ...extra,
          pinged,
          lastError: () => connected.lastError[index],
        }),
      ),
    );
    return markDuplicates(probes);
  } finally {
    connected.close();
  }
}

/**
 * A server listed twice (two addresses, two databases) is one failure domain: as in the library's
 * rounds, the members after its first do not count, and say whose server they are.
 */
function markDuplicates(probes: MemberProbe[]): MemberProbe[] {
  const first = new Map<string, string>();
  for (const probe of probes) {
    if (probe.server === undefined) continue;
    const earlier = first.get(probe.server);
    if (earlier === undefined) first.set(probe.server, probe.member);
    else probe.notCounting ??= sameServerAs(earlier);
  }
  return probes;
}

function epochText(probe: MemberProbe): string {
  const epoch = probe.epoch;
  if (!epoch) return '-';
  const genesis = epoch.genesis ? ', genesis' : '';
  const counts = epoch.slots ? slotsText(epoch.slots) : '';
  // A cluster: the resource's slot (status), or the worst of its slots (members).
  const slot = epoch.slot !== undefined ? `slot ${epoch.slot}: ` : counts !== '' ? 'worst slot: ' : '';
  if (epoch.state === 'none') return `${slot}no epoch yet (its first lock starts a quarantine)${genesis}${counts}`;
  if (epoch.state === 'stale') return `${slot}epoch of an earlier server process (restart or failover): its next lock starts a quarantine${genesis}${counts}`;
  if (epoch.state === 'quarantined') return `${slot}quarantined, ${formatMs(epoch.leftMs ?? 0)} left (age ${formatMs(epoch.ageMs ?? 0)})${genesis}${counts}`;
  return `${slot}trusted (age ${formatMs(epoch.ageMs ?? 0)})${genesis}${counts}`;
}

/** A cluster's slot epochs by state, the worst first; nothing to add when all 16384 are trusted. */
function slotsText(slots: NonNullable<EpochState['slots']>): string {
  const parts = (['none', 'stale', 'quarantined', 'unreadable', 'trusted'] as const)
    .filter((state) => slots[state] > 0)
    .map((state) => `${slots[state]} ${state}`);
  if (parts.length === 1 && slots.trusted > 0) return '';
  const soonest = slots.shortestLeftMs !== undefined && slots.quarantined > 1 ? `, the first quarantine ends in ${formatMs(slots.shortestLeftMs)}` : '';
  return `; slots: ${parts.join(', ')}${soonest}`;
}

const reach = (probe: MemberProbe) => (probe.reachable ? (probe.error ? `error: ${probe.error}` : 'yes') : `no: ${probe.error ?? 'unreachable'}`);
const latency = (probe: MemberProbe) => (probe.latencyMs === undefined ? '-' : `${probe.latencyMs.toFixed(2)} ms`);

/** The role, and why a member that answers would still not count (it may evict lock keys). */
const roleText = (p: MemberProbe) => (p.notCounting === undefined || p.role !== 'master' ? (p.role ?? '-') : `${p.role}, ${p.notCounting}`);

export async function status(resource: string, options: InspectOptions): Promise<number> {
  const probes = await probeAll(options, { resource });
  const quorum = quorumOf(probes.length);
  const heldBy = new Map<string, number>();
  for (const p of probes) if (p.lock?.held && p.lock.owner) heldBy.set(p.lock.owner, (heldBy.get(p.lock.owner) ?? 0) + 1);
  const [owner, count] = [...heldBy.entries()].sort((a, b) => b[1] - a[1])[0] ?? [undefined, 0];
  const read = probes.filter((p) => p.lock !== undefined);
  const sharedOn = read.filter((p) => !p.lock!.held && (p.lock!.readers ?? 0) > 0).length;
  const freeOn = read.filter((p) => !p.lock!.held && !((p.lock!.readers ?? 0) > 0)).length;
  const unreachable = probes.filter((p) => !p.reachable).length;
  // Reachable, but the reads failed (an error): neither free nor held as far as we know.
  const unread = probes.length - read.length - unreachable;
  const heldByOthers = read.filter((p) => p.lock!.held).length - count;
  const summary = {
    resource,
    quorum,
    held: count >= quorum,
    owner: count >= quorum ? owner : undefined,
    heldOn: count,
    heldByOthers,
    sharedOn,
    freeOn,
    unreachable,
    unread,
  };
  if (options.json) {
    options.out(JSON.stringify({ ...summary, members: probes }) + '\n');
  } else {
    const rows = probes.map((p) => [
      p.member,
      reach(p),
      roleText(p),
      latency(p),
      p.lock ? (p.lock.held ? 'held' : p.lock.readers ? `shared (${p.lock.readers})` : 'free') : '-',
      p.lock?.held && p.lock.pttlMs !== undefined ? (p.lock.pttlMs < 0 ? 'no ttl' : formatMs(p.lock.pttlMs)) : '-',
      p.lock?.owner ?? '-',
      epochText(p),
    ]);
    options.out(table(['member', 'reachable', 'role', 'latency', 'lock', 'pttl', 'owner', 'quarantine'], rows));
    options.out(`${resource}: ${statusSummary(summary, probes.length, owner)}\n`);
  }
  return probes.some((p) => !p.reachable || p.error) ? EXIT.unavailable : EXIT.ok;
}

/**
 * "held by owner 1a2b3c4d on 2 of 3 members (quorum 2); 1 unreachable", or "not held by a quorum
 * (free on 1 of 3 members; 2 unreachable; quorum 2 of 3)": never "free everywhere" when only some
 * members could be read.
 */
function statusSummary(
  s: {
    quorum: number;
    held: boolean;
    owner?: string | undefined;
    heldOn: number;
    heldByOthers: number;
    sharedOn: number;
    freeOn: number;
    unreachable: number;
    unread: number;
  },
  total: number,
  topOwner: string | undefined,
): string {
  const others = [
    ...(s.heldByOthers > 0 ? [`held by other owners on ${s.heldByOthers}`] : []),
    ...(s.unreachable > 0 ? [`${s.unreachable} unreachable`] : []),
    ...(s.unread > 0 ? [`${s.unread} could not be read`] : []),
  ];
  if (s.held) return `held by owner ${topOwner} on ${s.heldOn} of ${total} members (quorum ${s.quorum})${others.map((part) => `; ${part}`).join('')}`;
  // Readers (shared locks) hold it where no writer does: as held as a writer's lock for a writer.
  if (s.sharedOn >= s.quorum)
    return `held shared by readers on ${s.sharedOn} of ${total} members (quorum ${s.quorum})${others.map((part) => `; ${part}`).join('')}`;
  const parts = [
    ...(s.heldOn > 0 ? [`owner ${topOwner} on ${s.heldOn}`] : []),
    ...(s.sharedOn > 0 ? [`held shared on ${s.sharedOn}`] : []),
    `free on ${s.freeOn} of ${total} member${total === 1 ? '' : 's'}`,
    ...others,
  ];
  return `not held by a quorum (${parts.join('; ')}; quorum ${s.quorum} of ${total})`;
}

export async function members(options: InspectOptions): Promise<number> {
  const probes = await probeAll(options, { info: true });
  const quorum = quorumOf(probes.length);
  const healthyCount = probes.filter(healthy).length;
  const usable = probes.filter((p) => healthy(p) && p.epoch?.state === 'trusted').length;
  // OK only when a quorum can vote: healthy masters past their restart quarantine. Healthy but
  // quarantined members answer every script, and every lock still fails: monitoring must see it.
  const ok = healthyCount >= quorum && usable >= quorum;
  const quarantined = healthyCount >= quorum && usable < quorum;
  const advice = quarantined ? quarantineAdvice(probes, options.maxLockTtl) : undefined;
  if (options.json) {
    const note = advice ? { note: advice.text, trustAdvised: advice.trustAdvised } : {};
    options.out(
      JSON.stringify({ quorum, healthy: healthyCount, trusted: usable, ok, ...note, members: probes.map((p) => ({ ...p, healthy: healthy(p) })) }) + '\n',
    );
  } else {
    const rows = probes.map((p) => [p.member, healthy(p) ? 'healthy' : 'UNHEALTHY', reach(p), roleText(p), latency(p), p.version ?? '-', epochText(p)]);
    options.out(table(['member', 'health', 'reachable', 'role', 'latency', 'version', 'quarantine'], rows));
    if (advice) {
      options.out(`${healthyCount} of ${probes.length} healthy masters, but only ${usable} past the restart quarantine, quorum ${quorum}: NOT ENOUGH\n`);
      options.out(`note: ${advice.text}\n`);
    } else {
      options.out(`${healthyCount} of ${probes.length} healthy masters, quorum ${quorum}: ${ok ? 'OK' : 'NOT ENOUGH'}\n`);
    }
  }
  return ok ? EXIT.ok : EXIT.unavailable;
}

/** trust on a cluster sends one script per slot, 16384 at once: the last are answered long after they were sent. */
const CLUSTER_TRUST_TIMEOUT_MS = 10_000;

/**
 * `trust`: redlock.trustMembers() on each member. `restore-fencing --floor N` (with `floor`):
 * redlock.restoreFencing(N) on each, the operator's way back after a majority lost its fence
 * counters at once.
 */
export async function trust(options: InspectOptions, floor?: number, force = false): Promise<number> {
  // Read first, write after: the epochs as they were tell whether trusting looks like a mistake.
  const warning = floor === undefined ? trustWarning(await probeAll(options, {}), options.maxLockTtl) : undefined;
  if (warning !== undefined && !force) {
    // The one step that can break mutual exclusion, on members that look restarted: not without --force.
    const refusal = `trust: refusing: ${warning} If you are sure that no lock was held on these members, run quorumlock trust --yes --force`;
    if (options.json) options.out(JSON.stringify({ refused: true, warning, exitCode: EXIT.usage }) + '\n');
    options.err(`quorumlock: ${refusal}\n`);
    return EXIT.usage;
  }
  if (warning !== undefined) options.err(`quorumlock: WARNING (trusting anyway: --force): ${warning}\n`);
  const timeouts = (member: MemberUrl) => ({
    commandTimeoutMs: member.topology?.kind === 'cluster' ? Math.max(options.timeoutMs, CLUSTER_TRUST_TIMEOUT_MS) : options.timeoutMs,
    connectTimeoutMs: options.timeoutMs,
  });
  const connected = connect(options.members, timeouts, options.tls);
  let redlock: Redlock | undefined;
  try {
    await connected.ready(2 * options.timeoutMs);
    // Not connected: the connection error says more than "Command timed out".
    const failed = (index: number, error: Error) => ({
      trusted: false,
      quarantineLeftMs: undefined,
      error: (connected.clients[index]!.status !== 'ready' && connected.lastError[index]) || error,
    });
    // One Redlock on the members that connected, so one round on them all (trustMembers,
    // restoreFencing: quorum/operator.ts), whose deadline (the slowest member's command timeout,
    // plus --timeout) is the only one. A member that did not connect is reported, not asked.
    const ready = connected.clients.flatMap((client, index) => (client.status === 'ready' ? [index] : []));
    const timeoutMs = Math.max(0, ...ready.map((index) => timeouts(options.members[index]!).commandTimeoutMs)) + options.timeoutMs;
    type Outcome = { trusted: boolean; quarantineLeftMs?: number | undefined; counter?: number | undefined; error?: Error | undefined };
    let answers: Outcome[] = [];
    if (ready.length > 0) {
      redlock = new Redlock(
        ready.map((index) => connected.clients[index]!),
        { maxLockTtl: options.maxLockTtl },
      );
      // The members as the operator's process has read them, before the call: an epoch that
      // replaced another during the call is refused unless its lineage was read first (this is the
      // member `members` showed, restarted from disk or failed over: redis-member.ts, #onEveryEpoch).
      for (let waited = 0; waited < timeoutMs && redlock.members.some((member) => member.role === undefined); waited += 10) await systemClock.sleep(10);
      answers =
        floor === undefined
          ? await redlock.trustMembers({ timeoutMs })
          : (await redlock.restoreFencing(floor, { timeoutMs })).map(({ restored: trusted, counter, error }) => ({ trusted, counter, error }));
    }
    const results = connected.clients.map((_, index) => {
      const at = ready.indexOf(index);
      if (at === -1) return failed(index, new Error(`not connected within ${2 * options.timeoutMs} ms`));
      const result = answers[at]!;
      return result.error ? failed(index, result.error) : result;
    });
    const named = results.map((result, index) => ({
      member: options.members[index]!.name,
      trusted: result.trusted,
      ...('quarantineLeftMs' in result && result.quarantineLeftMs !== undefined ? { quarantineLeftMs: result.quarantineLeftMs } : {}),
      ...('counter' in result && result.counter !== undefined ? { fenceCounter: result.counter } : {}),
      ...(result.error ? { error: result.error.message } : {}),
    }));
    if (options.json) {
      options.out(JSON.stringify({ ...(warning === undefined ? {} : { warning }), members: named }) + '\n');
    } else {
      const outcome = (r: (typeof named)[number]) => (r.trusted ? (floor === undefined ? 'trusted' : 'restored') : `FAILED: ${r.error ?? 'unknown error'}`);
      if (floor === undefined) {
        options.out(
          table(
            ['member', 'result', 'quarantine'],
            named.map((r) => [r.member, outcome(r), r.quarantineLeftMs ? `ended ${formatMs(r.quarantineLeftMs)} early` : '-']),
          ),
        );
      } else {
        options.out(
          table(
            ['member', 'result', 'fence counter'],
            named.map((r) => [r.member, outcome(r), r.fenceCounter === undefined ? '-' : String(r.fenceCounter)]),
          ),
        );
      }
    }
    return named.every((r) => r.trusted) ? EXIT.ok : EXIT.unavailable;
  } finally {
    await redlock?.quit();
    connected.close();
  }
}
