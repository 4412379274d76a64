/**
 * The majority rule: how many votes of N members make a quorum. Pure, so it can be checked
 * exhaustively. (A round counts its votes to the quorum its caller names: quorum/round.ts, decide.)
 *
 * Why a strict majority: any two majorities of the same N members share at least one member, and
 * that member holds at most one owner's key at a time. So two clients can never both collect
 * quorumOf(n) votes for the same resource while their keys are alive.
 */
export function quorumOf(memberCount: number): number {
  return Math.floor(memberCount / 2) + 1;
}
