/**
 * Registers the lock scripts on a member's ioredis client. ioredis' defineCommand sends EVAL the
 * first time on each socket and EVALSHA after that, and falls back to EVAL on NOSCRIPT, so a
 * member that restarted with an empty script cache still works without an extra round trip.
 */
import type { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
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

/** Every script quorumlock sends, by the name its command takes (commandNames adds a digest). */
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

/** A script's command on a client: its key count, then its keys, then its arguments. */
export type ScriptCommand = (keyCount: number | string, ...keysThenArgs: (string | number)[]) => Promise<unknown>;

/**
 * The name each script's command has on a client: the script's name and a digest of its text.
 * Two copies of quorumlock in one process that share clients (a dependency bundling another
 * version) then each run their own scripts: ioredis keeps one script per command name, and the
 * first copy to define a name would otherwise serve the other one's calls with its own text.
 * Prefixed, so they cannot clash with the user's own commands.
 */
export const commandNames = Object.fromEntries(
  Object.entries(scripts).map(([name, lua]) => [name, `${name}_${createHash('sha1').update(lua).digest('hex').slice(0, 12)}`]),
) as Record<ScriptName, string>;

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
  options.autoPipeliningIgnoredCommands = [...new Set([...(options.autoPipeliningIgnoredCommands ?? []), ...Object.values(commandNames)])];
}

export function registerScripts(client: Redis): void {
  for (const [name, lua] of Object.entries(scripts)) {
    const command = commandNames[name as ScriptName];
    // The same client may serve several Redlock instances: define once.
    if (typeof (client as unknown as Record<string, unknown>)[command] !== 'function') client.defineCommand(command, { lua });
  }
}

/** The command of script `name` on a client (or a pipeline) that registerScripts() prepared. */
export function scriptCommand(client: object, name: ScriptName): ScriptCommand {
  return (client as Record<string, ScriptCommand>)[commandNames[name]]!.bind(client);
}

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
} as const;
export type Bindable = keyof typeof BINDABLE;

/**
 * A copy of `lua` bound to the process with run id `runId` (it skips reading INFO server), made
 * unique by `nonce`: each copy is loaded exactly once (members/binding.ts says why).
 */
export function boundLua(lua: string, runId: string, nonce: string): string {
  if (!/^[0-9a-f]{40}$/.test(runId) || !/^[0-9a-f]+$/.test(nonce)) throw protocolError(`cannot bind a script to run id ${JSON.stringify(runId)}`);
  if (!lua.includes(GENERIC_BINDING)) throw protocolError('this script does not read the run id');
  return lua.replace(GENERIC_BINDING, `local BOUND_RUN_ID = '${runId}' -- copy ${nonce}`);
}
