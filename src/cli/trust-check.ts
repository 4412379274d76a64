/**
 * `trust` on members that held data before is the hazard the restart quarantine exists for: a
 * member that restarted empty forgot the locks it held, and trusting it at once lets a second
 * owner get a lock the first still holds. The epochs tell the two apart, as far as they can: a
 * set where some members show a history (an epoch older than --max-lock-ttl, fence tokens
 * issued, or an epoch written by an earlier server process) while others have none, or a fresh
 * one, looks restarted empty or flushed, not brand new.
 */
import { formatMs } from './duration.js';
import type { MemberProbe } from './readings.js';

/** What a member's epoch says of its past, or undefined when it says nothing (unreadable). */
function history(probe: MemberProbe, maxLockTtl: number): string | undefined {
  const epoch = probe.epoch;
  if (!epoch) return undefined;
  const past = [
    ...(epoch.state === 'stale' ? ['an epoch written by an earlier server process (restart or failover)'] : []),
    ...(epoch.ageMs !== undefined && epoch.ageMs > maxLockTtl ? [`an epoch ${formatMs(epoch.ageMs)} old`] : []),
    ...(epoch.fenced ? ['fence tokens issued'] : []),
  ];
  return past.length > 0 ? past.join(', ') : undefined;
}

/** No epoch at all, or one younger than --max-lock-ttl that was never declared brand new. */
const looksEmpty = (probe: MemberProbe, maxLockTtl: number) =>
  probe.epoch !== undefined && history(probe, maxLockTtl) === undefined && (probe.epoch.state === 'none' || !probe.epoch.genesis);

/** A warning when trusting `probes` looks like the restarted-empty case; undefined otherwise. */
export function trustWarning(probes: readonly MemberProbe[], maxLockTtl: number): string | undefined {
  const seasoned = probes.filter((probe) => history(probe, maxLockTtl) !== undefined);
  const stale = probes.filter((probe) => probe.epoch?.state === 'stale');
  const empty = probes.filter((probe) => looksEmpty(probe, maxLockTtl));
  if (seasoned.length === 0 || (empty.length === 0 && stale.length === 0)) return undefined;
  const named = (list: readonly MemberProbe[]) => list.map((probe) => probe.member).join(', ');
  const pasts = seasoned.map((probe) => `${probe.member} (${history(probe, maxLockTtl)})`).join('; ');
  const suspects = [
    ...(empty.length > 0 ? [`${named(empty)} ${empty.length === 1 ? 'has' : 'have'} no epoch or a fresh one`] : []),
    ...(stale.length > 0 ? [`${named(stale)} restarted or failed over since ${stale.length === 1 ? 'its' : 'their'} epoch was written`] : []),
  ];
  return (
    `these members held data before: ${pasts}; yet ${suspects.join(', and ')}. ` +
    'That looks like members that restarted empty or were flushed, not a brand-new deployment: trusting them ' +
    `lets a lock they forgot be granted twice. Unless you are sure no lock was held, let the quarantine (--max-lock-ttl, ${formatMs(maxLockTtl)}) run out instead.`
  );
}

/**
 * What to do while too few members are past their quarantine. `trust` is named only when no
 * member shows a past: where any does, the others restarted, failed over or were flushed, and the
 * one safe step is to wait.
 */
export function quarantineAdvice(probes: readonly MemberProbe[], maxLockTtl: number): { trustAdvised: boolean; text: string } {
  const pasts = probes.flatMap((probe) => {
    const past = history(probe, maxLockTtl);
    return past === undefined ? [] : [`${probe.member} (${past})`];
  });
  const longest = Math.max(0, ...probes.map((probe) => probe.epoch?.leftMs ?? 0));
  const wait = longest > 0 ? `; the last quarantine ends in ${formatMs(longest)}` : '';
  if (pasts.length > 0)
    return {
      trustAdvised: false,
      text:
        `locks fail until a quorum is past it. Members show a past (${pasts.join('; ')}): the others restarted, failed over or were flushed. ` +
        `Wait for the quarantine to run out (--max-lock-ttl, ${formatMs(maxLockTtl)})${wait}; do not run quorumlock trust`,
    };
  return {
    trustAdvised: true,
    text: `locks fail until a quorum is past it${wait}. No member shows a past: if every one is brand new (it never held a lock), run quorumlock trust --yes once; otherwise wait`,
  };
}
