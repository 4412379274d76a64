/**
 * Why `elect` is not elected yet: another candidate leads, members sit out their restart
 * quarantine, members do not answer, or the lock is won but too few members have a trusted fence
 * counter to issue a term (after a majority lost its data: restore-fencing). Read from the campaign's acquire votes (the library's
 * 'quorumlock:vote' channel), judged once a round's answers are in (nodeTimeout after its first
 * vote), and told when the campaign starts waiting and whenever the reason changes (held for two
 * judgements in a row), not on every retry.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { MemberVote } from '../quorum/votes.js';
import { formatMs } from './duration.js';
import { fenceCause, memberStates, waitCause, type Connection, type MemberState, type WaitCause } from './member-state.js';

export interface CampaignWaitOptions {
  election: string;
  /** The members' names, in order (memberId), and their clients: the member states of a report. */
  names: readonly string[];
  connections: () => readonly Connection[];
  nodeTimeout: number;
  /** Called with the reason in words, its cause, and each member's state. */
  report(text: string, cause: WaitCause, members: MemberState[]): void;
}

export interface CampaignWait {
  /** Elected: forget what was said, so that the next campaign tells its reason afresh. Returns whether a reason had been told. */
  elected(): boolean;
  stop(): void;
}

function words(why: WaitCause): string {
  const members = `${why.count} member${why.count === 1 ? '' : 's'}`;
  switch (why.cause) {
    case 'held':
      return 'another candidate leads';
    case 'quarantined':
      return `${members} in ${why.count === 1 ? 'its' : 'their'} restart quarantine${why.longestLeftMs === undefined ? ' (or not counting)' : ` (up to ${formatMs(why.longestLeftMs)} left)`}`;
    case 'unreachable':
      return `${members} not answering`;
    case 'unfenced':
      return `${members} without a trusted fence counter to issue a term (members that lost their data); if a majority lost its data at once, run quorumlock restore-fencing --floor N, with N at or above every term ever issued`;
  }
}

export function watchCampaign(options: CampaignWaitOptions): CampaignWait {
  const last = new Map<string, MemberVote<string>>();
  /** Each member's answer to the latest fence round (a term's proposal). */
  const fenced = new Map<string, MemberVote<string>>();
  let told: string | undefined;
  let seen: string | undefined;
  let judging: NodeJS.Timeout | undefined;
  const judge = () => {
    judging = undefined;
    const votes = [...last.values()];
    const why = waitCause(votes) ?? fenceCause([...fenced.values()]);
    // The count is part of the reason (2 members down, then 1); a quarantine's time left is not.
    const key = why && `${why.cause} ${why.count}`;
    // Told once judged so twice in a row: a member coming back runs what queued up for it while
    // it was away (our own earlier attempts), which for a round or so reads as another holder.
    const steady = key === seen;
    seen = key;
    if (why === undefined || key === told || !steady) return;
    told = key;
    options.report(`waiting to lead "${options.election}": ${words(why)}`, why, memberStates(options.names, options.connections(), votes, options.nodeTimeout));
  };
  const listener = (message: unknown) => {
    const vote = message as MemberVote<string> & { operation: string };
    if (vote.operation === 'fence') fenced.set(vote.member, vote);
    if (vote.operation !== 'acquire') return;
    last.set(vote.member, vote);
    // Every answer of a round is in within nodeTimeout of its first (a late one is a 'timeout').
    judging ??= setTimeout(judge, options.nodeTimeout + 10);
  };
  subscribe('quorumlock:vote', listener);
  return {
    elected() {
      clearTimeout(judging);
      judging = undefined;
      last.clear();
      fenced.clear();
      seen = undefined;
      const wasTold = told !== undefined;
      told = undefined;
      return wasTold;
    },
    stop() {
      clearTimeout(judging);
      unsubscribe('quorumlock:vote', listener);
    },
  };
}
