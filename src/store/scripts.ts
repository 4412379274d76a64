/**
 * Registers the lock scripts on a member's ioredis client. ioredis' defineCommand sends EVAL the
 * first time on each socket and EVALSHA after that, and falls back to EVAL on NOSCRIPT, so a
 * member that restarted with an empty script cache still works without an extra round trip.
 */
import type { Redis } from 'ioredis';
import { acquireLua, acquireSharedLua, electionLua, extendLua, extendSharedLua, fenceLua, leaveLua, releaseLua, trustLua } from '../lua/sources.js';

/** The commands quorumlock adds to a client. Prefixed so they cannot clash with the user's own. */
export interface ScriptCommands {
  quorumlockAcquire(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number | number[]>;
  quorumlockExtend(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumlockAcquireShared(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number | number[]>;
  quorumlockExtendShared(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumlockRelease(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumlockLeave(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumlockFence(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<[number, number, number]>;
  quorumlockTrust(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number>;
  quorumlockElection(keyCount: number, ...keysThenArgs: (string | number)[]): Promise<number | unknown[]>;
}

const scripts = {
  quorumlockAcquire: acquireLua,
  quorumlockExtend: extendLua,
  quorumlockAcquireShared: acquireSharedLua,
  quorumlockExtendShared: extendSharedLua,
  quorumlockRelease: releaseLua,
  quorumlockLeave: leaveLua,
  quorumlockFence: fenceLua,
  quorumlockTrust: trustLua,
  quorumlockElection: electionLua,
} as const;

/**
 * Our scripts never go through ioredis' auto-pipelining (`enableAutoPipelining`), whatever the
 * user's setting: its queue flushes on a later tick and not while another batch awaits replies,
 * so a command written directly could overtake a queued one (Member.#call needs one ordered
 * path). On a Cluster it would also batch them by the node of their first argument, which for a
 * script is its key count, not a key ("All keys in the pipeline should belong to the same slots
 * allocation group").
 */
export function keepOutOfAutoPipelining(client: Redis): void {
  const options = client.options as { enableAutoPipelining?: boolean; autoPipeliningIgnoredCommands?: string[] };
  if (!options.enableAutoPipelining) return;
  options.autoPipeliningIgnoredCommands = [...new Set([...(options.autoPipeliningIgnoredCommands ?? []), ...Object.keys(scripts)])];
}

export function registerScripts(client: Redis): Redis & ScriptCommands {
  for (const [name, lua] of Object.entries(scripts)) {
    // The same client may serve several Redlock instances: define once.
    if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') client.defineCommand(name, { lua });
  }
  return client as Redis & ScriptCommands;
}

/** The line of the generic scripts that a bound copy replaces (src/lua/_epoch.lua). */
const GENERIC_BINDING = 'local BOUND_RUN_ID = false';

/** The scripts that read the server's run id (currentEpoch), and so have bound copies. */
export const BINDABLE = { quorumlockAcquire: acquireLua, quorumlockAcquireShared: acquireSharedLua, quorumlockFence: fenceLua } as const;
export type Bindable = keyof typeof BINDABLE;

/**
 * A copy of `lua` bound to the process with run id `runId` (it skips reading INFO server), made
 * unique by `nonce`: each copy is loaded exactly once (members/binding.ts says why).
 */
export function boundLua(lua: string, runId: string, nonce: string): string {
  if (!/^[0-9a-f]{40}$/.test(runId) || !/^[0-9a-f]+$/.test(nonce)) throw new Error(`quorumlock: cannot bind a script to run id ${JSON.stringify(runId)}`);
  if (!lua.includes(GENERIC_BINDING)) throw new Error('quorumlock: this script does not read the run id');
  return lua.replace(GENERIC_BINDING, `local BOUND_RUN_ID = '${runId}' -- copy ${nonce}`);
}
