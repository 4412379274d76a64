/**
 * Counting votes. Pure, so it can be checked exhaustively.
 *
 * Why a strict majority: any two majorities of the same N members share at least one member, and
 * that member holds at most one owner's key at a time. So two clients can never both collect
 * quorumOf(n) votes for the same resource while their keys are alive.
 */
export function quorumOf(memberCount: number): number {
  return Math.floor(memberCount / 2) + 1;
}

/** 'won': quorum reached. 'lost': too many no's for quorum to be reached. 'open': keep waiting. */
export type Decision = 'won' | 'lost' | 'open';

export function decide(yes: number, no: number, memberCount: number): Decision {
  const quorum = quorumOf(memberCount);
  if (yes >= quorum) return 'won';
  if (memberCount - no < quorum) return 'lost';
  return 'open';
}
