/**
 * The attempt loop around attemptLock(): retries with jitter, the wait budget and the AbortSignal.
 * Every acquire ends within its budget (plus the last rollback, itself bounded by nodeTimeout):
 * each round is cut at min(nodeTimeout, time left), and no delay is slept past the budget.
 */
import { LockAcquireError, type AttemptRecord } from './errors.js';
import type { Member } from './member.js';
import type { AttemptPolicy, Settings } from './options.js';
import { attemptLock, type AttemptResult } from './quorum/attempt.js';
import { describeVotes } from './quorum/votes.js';

export type Won = Extract<AttemptResult, { won: true }>;

/** retryDelay ± retryJitter, never negative: competing clients fall out of step. */
export function retryDelayMs(policy: Pick<AttemptPolicy, 'retryDelay' | 'retryJitter'>, random: () => number = Math.random): number {
  return Math.max(0, policy.retryDelay + (random() * 2 - 1) * policy.retryJitter);
}

export async function acquireWithRetries(
  members: readonly Member[],
  settings: Settings,
  resources: readonly string[],
  ttl: number,
  policy: AttemptPolicy,
): Promise<Won> {
  const { clock, logger } = settings;
  const begin = clock.now();
  const budgetEnd = begin + policy.waitTimeout;
  const attempts: AttemptRecord[] = [];
  let stoppedBecause: LockAcquireError['stoppedBecause'] = 'retries exhausted';
  let rollback: Promise<unknown> = Promise.resolve();

  for (let attempt = 1; ; attempt++) {
    policy.signal?.throwIfAborted();
    const startedMs = clock.now() - begin;
    const timeoutMs = Math.min(settings.nodeTimeout, policy.waitTimeout - startedMs);
    if (timeoutMs <= 0) {
      stoppedBecause = 'wait budget exhausted';
      break;
    }
    const result = await attemptLock(members, settings, resources, ttl, timeoutMs, policy.signal);
    if (result.won) {
      logger.debug({ resources, attempt, elapsedMs: clock.now() - begin, remainingMs: result.deadline - clock.now() }, 'lock acquired');
      return result;
    }
    const { round, outcome, validityMs } = result;
    attempts.push({ attempt, outcome, startedMs, elapsedMs: round.elapsedMs, validityMs, votes: round.votes });
    logger.debug({ resources, attempt, outcome, votes: describeVotes(round.votes) }, 'lock attempt failed');
    rollback = result.rollback;

    if (attempt > policy.retryCount) break;
    const delay = retryDelayMs(policy);
    if (clock.now() + delay >= budgetEnd) {
      stoppedBecause = 'wait budget exhausted';
      break;
    }
    try {
      await Promise.all([rollback, clock.sleep(delay, policy.signal)]);
    } catch (abortReason) {
      await rollback;
      throw abortReason;
    }
  }
  await rollback;
  const error = new LockAcquireError(resources, attempts, clock.now() - begin, stoppedBecause);
  logger.debug({ resources, attempts: attempts.length, outcome: error.outcome, elapsedMs: error.elapsedMs }, 'lock not acquired');
  throw error;
}
