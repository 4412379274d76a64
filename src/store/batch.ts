/**
 * The batch script: several calls of the batched scripts to one member in one script call
 * (members/batching.ts sends it). Each call runs as the body of its own script, unchanged: the
 * script's text is the body of a Lua function whose parameters are named KEYS and ARGV, so every
 * name in it means what it means in a call of its own, and the call gets the KEYS and ARGV it
 * would have had (its epoch hash and epoch id included: each call's binding, _bound.lua, runs
 * as in its own call). A call that fails (an error reply, or an error raised inside, caught) is
 * that call's error, not the batch's. Only as a bound copy (members/binding.ts): the batch has
 * no generic form, so a batch that reaches another process than the one it was loaded into
 * fails with NOSCRIPT, as a copy of each script would.
 *
 * ARGV: the number of calls n; the epoch id every call is bound to when they share one ('' when
 * not); per call a header, its script (an index into BATCHED, from 1) + 4 × its key count + 4096
 * × its argument count; then every call's arguments in order. KEYS: every call's keys in order,
 * then the epoch hash they share, if they do. Calls that share their epoch (its hash, each call's
 * last key, and the id it is bound to, its first argument: as on one member outside a Cluster)
 * send them once: the batch puts them back in each call's KEYS and ARGV. Reply: per call two
 * entries, 0 and its reply or 1 and its error message.
 */
import { protocolError } from '../errors.js';
import { acquireLua, releaseLua } from '../lua/sources.js';

/** The scripts a batch can run: what an acquire and a release send (their order is the protocol's). */
export const BATCHED = { quorumlockAcquire: acquireLua, quorumlockRelease: releaseLua } as const;
export type Batched = keyof typeof BATCHED;
const KINDS = Object.keys(BATCHED) as Batched[];
// A call's header (batchArgs) holds its script in 2 bits and its key count in 10.
const MAX_CALL_KEYS = 1023;
if (KINDS.length > 3) throw protocolError('the batch header holds at most 3 scripts');

// The calls see `redis` through a table that reads each INFO section once per batch: the
// sections the scripts read (replication: role and lineage; stats: evicted_keys; server: run id,
// uptime) cannot change while a script runs (a server evicts only between commands), so every
// call reads what it would have read alone at that point. INFO commandstats is read each time: it
// counts the scripts that ran before the batch (a restart then looks less clean, never more).
// The calls share one reading of the member's epoch too (_epoch.lua, EPOCH_MEMO: why it is
// exact), the ~4 µs of each call's check that is the same for all.
const ALONE_MEMO = 'local EPOCH_MEMO = false';
const sharing = (lua: string): string => {
  if (!lua.includes(ALONE_MEMO)) throw protocolError('a batched script does not read its epoch through EPOCH_MEMO');
  return lua.replace(ALONE_MEMO, () => 'local EPOCH_MEMO = memo');
};
export const batchLua = [
  'local run = {}',
  ...KINDS.map((name, index) => `run[${index + 1}] = function(KEYS, ARGV, redis, memo)\n${sharing(BATCHED[name])}\nend`),
  `local unpack, sections, memo = table.unpack or unpack, {}, {}
local once = setmetatable({
  call = function(command, ...)
    local key = command == 'INFO' and table.concat({...}, ' ')
    if not key or key == 'commandstats' then
      return redis.call(command, ...)
    end
    if not sections[key] then
      sections[key] = redis.call(command, ...)
    end
    return sections[key]
  end,
}, {__index = redis})
local n, bound = tonumber(ARGV[1]), ARGV[2]
local epoch = bound ~= '' and KEYS[#KEYS]
local k, a = 0, 2 + n
local out = {}
for c = 1, n do
  local header = tonumber(ARGV[2 + c])
  local keyCount, argCount = math.floor(header / 4) % 1024, math.floor(header / 4096)
  -- (unpack takes at most a few thousand values: a batch of two calls or more holds at most
  -- 640 keys, members/batching.ts; a call with more goes alone.)
  local keys, args = {unpack(KEYS, k + 1, k + keyCount)}, nil
  if epoch then
    keys[keyCount + 1], args = epoch, {bound, unpack(ARGV, a + 1, a + argCount)}
  else
    args = {unpack(ARGV, a + 1, a + argCount)}
  end
  k, a = k + keyCount, a + argCount
  local ok, reply = pcall(run[header % 4], keys, args, once, memo)
  if ok and not (type(reply) == 'table' and reply.err) then
    -- false, not nil: a nil would end the reply's array here (either reaches the client as nil).
    if reply == nil then
      reply = false
    end
    out[2 * c - 1], out[2 * c] = 0, reply
  else
    out[2 * c - 1], out[2 * c] = 1, type(reply) == 'table' and reply.err or 'ERR ' .. tostring(reply)
  end
end
return out`,
].join('\n');

/** One call in a batch: its script, and its KEYS and ARGV as a call of its own would send them. */
export interface BatchCall {
  script: Batched;
  keys: readonly string[];
  args: readonly string[];
}

/** The batch script's KEYS and ARGV for `calls`, in order (at most MAX_CALL_KEYS keys a call). */
export function batchArgs(calls: readonly BatchCall[]): { keys: string[]; args: string[] } {
  const first = calls[0]!;
  const epoch = first.keys.at(-1);
  const bound = first.args[0];
  const shared = epoch !== undefined && !!bound && calls.every((call) => call.keys.at(-1) === epoch && call.args[0] === bound);
  const drop = shared ? 1 : 0;
  const keys: string[] = [];
  const args: string[] = [String(calls.length), shared ? bound : ''];
  for (const call of calls) {
    // batching.ts never batches one (a batch of two calls or more holds at most 640 keys): a guard, not a path.
    if (call.keys.length - drop > MAX_CALL_KEYS) throw protocolError(`a batched call has at most ${MAX_CALL_KEYS} keys, not ${call.keys.length - drop}`);
    args.push(String(KINDS.indexOf(call.script) + 1 + 4 * (call.keys.length - drop) + 4096 * (call.args.length - drop)));
  }
  for (const call of calls) {
    for (let i = 0; i < call.keys.length - drop; i++) keys.push(call.keys[i]!);
    for (let i = drop; i < call.args.length; i++) args.push(call.args[i]!);
  }
  if (shared) keys.push(epoch);
  return { keys, args };
}

/**
 * Call `index`'s answer in a batch's reply: its reply, or its error as the client would have
 * raised it for a call of its own (a ReplyError with the server's message). A reply of another
 * shape is a protocol error for every call.
 */
export function batchAnswer(reply: unknown, index: number): { reply: unknown } | { error: Error } {
  const failed = Array.isArray(reply) ? (reply[2 * index] as unknown) : undefined;
  if (failed !== 0 && failed !== 1) return { error: protocolError(`the batch script answered no pair for call ${index}`) };
  const answer = (reply as unknown[])[2 * index + 1];
  if (failed === 0) return { reply: answer ?? null };
  const error = new Error(String(answer));
  error.name = 'ReplyError';
  return { error };
}
