/**
 * The lock scripts, by name, and their bound copies (members/binding.ts). How a client library
 * sends them is its adapter's job (src/clients/).
 */
import { protocolError } from '../errors.js';
import {
  acquireLua,
  acquireSharedLua,
  electionLua,
  epochLua,
  extendLua,
  extendSharedLua,
  fenceLua,
  leaderLua,
  leaveLua,
  permitsLua,
  releaseLua,
  trustLua,
} from '../lua/sources.js';
import { batchLua } from './batch.js';

/** Every script quorumlock sends, by name (the ioredis adapter's command names add a digest). */
export const scripts = {
  quorumlockAcquire: acquireLua,
  quorumlockExtend: extendLua,
  quorumlockAcquireShared: acquireSharedLua,
  quorumlockExtendShared: extendSharedLua,
  quorumlockRelease: releaseLua,
  quorumlockLeave: leaveLua,
  quorumlockFence: fenceLua,
  quorumlockTrust: trustLua,
  quorumlockElection: electionLua,
  quorumlockLeader: leaderLua,
  quorumlockEpoch: epochLua,
  quorumlockPermits: permitsLua,
} as const;

export type ScriptName = keyof typeof scripts;

/** The line of the generic scripts that a bound copy replaces (src/lua/_epoch.lua). */
const GENERIC_BINDING = 'local BOUND_RUN_ID = false';

/** The scripts that read the server's run id (currentEpoch), and so have bound copies. */
export const BINDABLE = {
  quorumlockAcquire: acquireLua,
  quorumlockAcquireShared: acquireSharedLua,
  quorumlockExtend: extendLua,
  quorumlockExtendShared: extendSharedLua,
  quorumlockRelease: releaseLua,
  quorumlockLeave: leaveLua,
  quorumlockFence: fenceLua,
  quorumlockEpoch: epochLua,
  /** Several acquire and release calls in one (batch.ts): bound copies only. */
  quorumlockBatch: batchLua,
} as const;
export type Bindable = keyof typeof BINDABLE;

/**
 * A copy of `lua` bound to the process with run id `runId` (it skips reading INFO server), made
 * unique by `nonce`: each copy is loaded exactly once (members/binding.ts says why).
 */
export function boundLua(lua: string, runId: string, nonce: string): string {
  if (!/^[0-9a-f]{40}$/.test(runId) || !/^[0-9a-f]+$/.test(nonce)) throw protocolError(`cannot bind a script to run id ${JSON.stringify(runId)}`);
  if (!lua.includes(GENERIC_BINDING)) throw protocolError('this script does not read the run id');
  // Every occurrence: the batch script holds the scripts it runs, each with its line.
  return lua.replaceAll(GENERIC_BINDING, `local BOUND_RUN_ID = '${runId}' -- copy ${nonce}`);
}
