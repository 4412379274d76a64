/**
 * One adapter per client under test, all with the same shape: acquire(resource, ttl) → a held lock
 * with release() and the validity the client itself claims at hand-out, plus "is this error a normal
 * failure to acquire?". Every client runs with its own DEFAULT settings; `one-attempt` only sets the
 * client's own retry count to zero (figure 5: time to fail). Each create() call gets its own
 * connections from the caller, so no two clients share a socket.
 */
import Redis, { Command } from 'ioredis';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { nextTick } from 'node:process';
import { ExecutionError, Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import { RedlockMutex, TimeoutError as SemaphoreTimeoutError } from 'redis-semaphore';
import { createRedlock, IoredisAdapter, LockAcquisitionError } from 'redlock-universal';
import type { MasterSet } from '../test/harness/types.js';
import { processBackend } from '../test/harness/process.js';
import { EPOCH_KEY, resourceKeys } from '../src/store/keys.js';
import { BATCH_LIMIT, CORK_CALLS } from '../src/members/batching.js';
import { evalshaWords } from '../src/clients/ioredis.js';
import { quorumlock as library } from './quorumlock.js';

const { LockAcquireError, Redlock } = library;
import { now } from './lib.js';

export interface Held {
  /** Resolves true when the client says a quorum confirmed the release (raw: the 3rd answer came). */
  release(): Promise<boolean>;
  /** The validity the client claimed when it handed the lock out, in ms (≤ 0: an already-expired lock). */
  readonly validityMs: number;
}

export interface Locker {
  acquire(resource: string, ttl: number): Promise<Held>;
  /** A normal "could not lock" rejection (contention, no quorum), as opposed to a bug or crash. */
  isAcquireFailure(error: unknown): boolean;
  /** Closes what the client opened itself (never the connections it was given). */
  close(): Promise<void>;
}

export type Mode = 'defaults' | 'one-attempt';

export interface Peer {
  readonly name: PeerName;
  /** Its settings, as used here. */
  readonly settings: Record<Mode, string>;
  create(members: Redis[], mode?: Mode): Locker;
  /** A contender that opens its own clients (figure 8: other client libraries); its close() closes them. */
  open?(set: MasterSet): Promise<Locker>;
}

// ---------------------------------------------------------------------------------------------
// raw reference (bench/core.ts rawCycle): not a client, the floor no client can beat.

const RAW_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** Resolves when `count` of the promises resolved to a value `ok` accepts. Never rejects; may never resolve. */
function firstOf<T>(promises: Promise<T>[], count: number, ok: (value: T) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    for (const promise of promises)
      promise.then(
        (value) => ok(value) && ++seen === count && resolve(),
        () => undefined,
      );
  });
}

let rawValue = 0;
const raw: Peer = {
  name: 'raw',
  settings: { defaults: 'SET NX PX round decided at the 3rd OK; Lua compare-and-delete decided at the 3rd answer', 'one-attempt': 'n/a' },
  create(members) {
    const quorum = Math.floor(members.length / 2) + 1;
    return {
      async acquire(resource, ttl) {
        const value = `v${++rawValue}`;
        const started = now();
        await firstOf(
          members.map((c) => c.set(resource, value, 'PX', ttl, 'NX')),
          quorum,
          (reply) => reply === 'OK',
        );
        const validityMs = ttl - (now() - started);
        return {
          validityMs,
          release: async () => {
            await firstOf(
              members.map((c) => c.eval(RAW_RELEASE, 1, resource, value)),
              quorum,
              () => true,
            );
            return true;
          },
        };
      },
      isAcquireFailure: () => false,
      close: async () => undefined,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// checked floor: raw, plus the reads quorumlock's per-call checks make on the server (the epoch
// binding's lineage and eviction count, the epoch hash), with quorumlock's keys and arguments,
// and quorumlock's writes (a tick's calls in one write per connection: without them, quorumlock
// outran its own floor by 1.3× at c = 512) and batching (a connection's calls of a tick after its
// first as one script call, the check reads made once per script call: without it, quorumlock
// outran its floor by 1.3× at c = 16 to 512). Not a client either: the floor of any client that
// keeps those checks, so that each target quorumlock misses can be set beside what the checks
// alone cost in the same run.

/** One uncontended acquire as quorumlock's script makes it on a bound copy, and nothing else. */
export const CHECKED_ACQUIRE =
  "local info = redis.call('INFO', 'replication', 'stats') local epoch = redis.call('HMGET', KEYS[6], 'id', 'since', 'run_id', 'replid', 'evicted') " +
  "if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[4]) == 0 then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0";
/** One uncontended release, likewise (a release reads no eviction count). */
export const CHECKED_RELEASE =
  "local info = redis.call('INFO', 'replication') local epoch = redis.call('HMGET', KEYS[6], 'id', 'since', 'run_id', 'replid', 'evicted') " +
  "if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('GET', KEYS[1]) == ARGV[2] then return redis.call('DEL', KEYS[1]) end return 0";
/**
 * Several of those calls in one script, the reads made once: the epoch hash is the last key, each
 * call has its 5 resource keys, and its arguments after a kind ('a': the acquire's 12, 'r': the
 * release's 4). Replies 1 / 0 per call, in order.
 */
export const CHECKED_BATCH = `local info = redis.call('INFO', 'replication', 'stats')
local epoch = redis.call('HMGET', KEYS[#KEYS], 'id', 'since', 'run_id', 'replid', 'evicted')
local out, a = {}, 1
for e = 1, (#KEYS - 1) / 5 do
  local k = (e - 1) * 5
  out[e] = 0
  if ARGV[a] == 'a' then
    if redis.call('EXISTS', KEYS[k + 1], KEYS[k + 2], KEYS[k + 4]) == 0 then
      redis.call('SET', KEYS[k + 1], ARGV[a + 2], 'PX', ARGV[a + 3])
      out[e] = 1
    end
    a = a + 13
  else
    if redis.call('EXISTS', KEYS[k + 2]) == 0 and redis.call('GET', KEYS[k + 1]) == ARGV[a + 2] then
      out[e] = redis.call('DEL', KEYS[k + 1])
    end
    a = a + 5
  end
end
return out`;
/**
 * The floor's scripts as quorumlock's adapter sends its own (src/clients/ioredis.ts, fastEvalsha):
 * one EVALSHA `Command` of the words filled by index, which ioredis takes as they are. ioredis'
 * `defineCommand` path (the arguments flattened per call, a NOSCRIPT fallback kept per call) made
 * the floor's client do 1.35× quorumlock's instructions per cycle at c = 1 (npm run
 * bench:instructions): a floor above quorumlock bounds nothing. Loaded before the first call.
 */
interface CheckedClient {
  checkedAcquire(keys: readonly string[], args: readonly string[]): Promise<number>;
  checkedRelease(keys: readonly string[], args: readonly string[]): Promise<number>;
  checkedBatch(keys: readonly string[], args: readonly string[]): Promise<number[]>;
  load(): Promise<unknown>;
}

function checkedClient(client: Redis): CheckedClient {
  const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
  const [acquire, release, batch] = [sha(CHECKED_ACQUIRE), sha(CHECKED_RELEASE), sha(CHECKED_BATCH)];
  const send = <T>(script: string, keys: readonly string[], args: readonly string[]) =>
    client.sendCommand(new Command('evalsha', evalshaWords(script, keys, args), { replyEncoding: 'utf8' })) as Promise<T>;
  return {
    checkedAcquire: (keys, args) => send(acquire, keys, args),
    checkedRelease: (keys, args) => send(release, keys, args),
    checkedBatch: (keys, args) => send(batch, keys, args),
    load: () => Promise.all([CHECKED_ACQUIRE, CHECKED_RELEASE, CHECKED_BATCH].map((lua) => client.script('LOAD', lua))),
  };
}
/** quorumlock's KEYS for one resource (src/store/keys.ts), the epoch hash last. */
export const checkedKeys = (resource: string): string[] => [...resourceKeys([resource]), EPOCH_KEY];

/**
 * Writes the calls a tick makes on `client` in one socket write, as quorumlock's members do
 * (src/members/batching.ts, enter): the first call in a tick corks the socket, the end of the
 * tick uncorks it, and a long burst is uncorked every CORK_CALLS calls.
 */
function corkTick(client: Redis): void {
  const corked = corkedTicks.get(client);
  if (corked !== undefined) {
    // The stream corked at the tick's first call, not client.stream now: a reconnect may replace it.
    if (++corked.calls < CORK_CALLS) return;
    corked.stream.uncork();
    corked.stream.cork();
    corked.calls = 0;
    return;
  }
  const stream = client.stream;
  if (!stream?.writable || client.status !== 'ready') return;
  stream.cork();
  corkedTicks.set(client, { stream, calls: 0 });
  nextTick(() => {
    corkedTicks.delete(client);
    stream.uncork();
  });
}
const corkedTicks = new Map<Redis, { stream: Redis['stream']; calls: number }>();

type CheckedCall = (kind: 'a' | 'r', keys: readonly string[], args: readonly string[]) => Promise<number>;
/** One call by its own script (CHECKED_ACQUIRE or CHECKED_RELEASE). */
const alone = (client: CheckedClient, kind: 'a' | 'r', keys: readonly string[], args: readonly string[]): Promise<number> =>
  kind === 'a' ? client.checkedAcquire(keys, args) : client.checkedRelease(keys, args);
interface Queued {
  kind: 'a' | 'r';
  keys: readonly string[];
  args: readonly string[];
  resolve(reply: number): void;
}

/**
 * The calls to `client`, as quorumlock's batching sends them (src/members/batching.ts): the
 * tick's first call alone, at once; the ones after it queued, at most BATCH_LIMIT a batch, and
 * sent as one CHECKED_BATCH call at the tick's end, in the tick's corked write.
 */
function batchingCalls(connection: Redis, client: CheckedClient): CheckedCall {
  let queue: Queued[] = [];
  let ticking = false;
  const flush = () => {
    const calls = queue;
    queue = [];
    if (calls.length === 0) return;
    const keys: string[] = [];
    const args: string[] = [];
    for (const call of calls) {
      for (let i = 0; i < 5; i++) keys.push(call.keys[i]!);
      args.push(call.kind, ...call.args);
    }
    keys.push(EPOCH_KEY);
    void client.checkedBatch(keys, args).then((replies) => calls.forEach((call, index) => call.resolve(replies[index]!)));
  };
  return (kind, keys, args) => {
    if (!ticking) {
      ticking = true;
      // Before corkTick's: the batch goes out in the tick's one write.
      nextTick(() => {
        ticking = false;
        flush();
      });
      corkTick(connection);
      return alone(client, kind, keys, args);
    }
    corkTick(connection);
    if (queue.length >= BATCH_LIMIT) flush();
    return new Promise((resolve) => queue.push({ kind, keys, args, resolve }));
  };
}

/** The checked floor; `batching: false` sends every call alone (bench/batching.ts: what batching saves). */
export function checkedFloor(batching = true): Peer {
  return {
    name: 'checked floor',
    settings: {
      defaults: `raw's rounds, with the reads of quorumlock's per-call checks in each script (EVALSHA), a tick's calls in one write per connection${batching ? ', those after its first as one script call' : ''}`,
      'one-attempt': 'n/a',
    },
    create(members) {
      const quorum = Math.floor(members.length / 2) + 1;
      const clients = members.map(checkedClient);
      const calls = members.map((connection, index): CheckedCall => {
        const client = clients[index]!;
        if (batching) return batchingCalls(connection, client);
        return (kind, keys, args) => (corkTick(connection), alone(client, kind, keys, args));
      });
      let loaded: Promise<unknown> | undefined;
      let ready = false;
      return {
        async acquire(resource, ttl) {
          if (!ready) {
            await (loaded ??= Promise.all(clients.map((client) => client.load())));
            ready = true;
          }
          const value = `v${++rawValue}`;
          const keys = checkedKeys(resource);
          const acquireArgs = ['epoch', value, String(ttl), 'waiter.1.1', '1', '0', '3000', '0', 'epoch', '', '', ''];
          const started = now();
          await firstOf(
            calls.map((call) => call('a', keys, acquireArgs)),
            quorum,
            (reply) => reply === 1,
          );
          const validityMs = ttl - (now() - started);
          return {
            validityMs,
            release: async () => {
              await firstOf(
                calls.map((call) => call('r', keys, ['epoch', value, '', ''])),
                quorum,
                () => true,
              );
              return true;
            },
          };
        },
        isAcquireFailure: () => false,
        close: async () => undefined,
      };
    },
  };
}
const checked = checkedFloor();

// ---------------------------------------------------------------------------------------------
// hand-off floor (figure 3 only): a release that hands the lock to the next waiter with one script
// round (it sets the waiter's value and publishes to it), the waiter holding it at the 3rd message
// on its own subscriber connections: what a hand-over by pub/sub costs on these masters, with no
// line, lease, presence, epoch or quarantine kept on the server. Its line is a FIFO in this
// process (the workers of figure 3 share one), so it never races and never retries.

const HANDOFF =
  "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) redis.call('PUBLISH', ARGV[4], ARGV[2]) return 1";
type HandoffClient = Redis & { handoffRelease(key: string, value: string, next: string, ttl: string, channel: string): Promise<number> };
/** A waiter in the floor's line: told 'handed' (its value is set) or 'free' (it sets it itself). */
interface FloorWaiter {
  value: string;
  channel: string;
  resume(how: 'handed' | 'free'): void;
}
const floorLines = new Map<string, { held: boolean; waiting: FloorWaiter[] }>();
let floorWorker = 0;

const handoffFloor: Peer = {
  name: 'hand-off floor',
  settings: { defaults: 'an in-process FIFO line; the release sets the next value and PUBLISHes on all 5; held at the 3rd message', 'one-attempt': 'n/a' },
  create() {
    throw new Error('the hand-off floor opens its own connections');
  },
  async open(set) {
    const quorum = Math.floor(set.masters.length / 2) + 1;
    const members = set.masters.map((m) => new Redis({ host: m.host, port: m.port })) as HandoffClient[];
    const subscribers = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
    for (const client of members) client.defineCommand('handoffRelease', { numberOfKeys: 1, lua: HANDOFF });
    const channel = `handoff-floor:${++floorWorker}`;
    const heard = new Map<string, { count: number; resume: FloorWaiter['resume'] }>();
    for (const subscriber of subscribers) {
      await subscriber.subscribe(channel);
      subscriber.on('message', (_channel: string, value: string) => {
        const waiter = heard.get(value);
        if (waiter && ++waiter.count === quorum) {
          heard.delete(value);
          waiter.resume('handed');
        }
      });
    }
    const setAll = (resource: string, value: string, ttl: number) =>
      firstOf(
        members.map((c) => c.set(resource, value, 'PX', ttl, 'NX')),
        quorum,
        (reply) => reply === 'OK',
      );
    return {
      async acquire(resource, ttl) {
        const line = floorLines.get(resource) ?? { held: false, waiting: [] };
        floorLines.set(resource, line);
        let value = `h${++rawValue}`;
        const started = now();
        if (!line.held && line.waiting.length === 0) {
          line.held = true;
          await setAll(resource, value, ttl);
        } else {
          const how = await new Promise<'handed' | 'free'>((resume) => {
            heard.set(value, { count: 0, resume });
            line.waiting.push({ value, channel, resume });
          });
          heard.delete(value);
          if (how === 'free') await setAll(resource, (value = `h${++rawValue}`), ttl);
        }
        const held = value;
        return {
          validityMs: ttl - (now() - started),
          release: async () => {
            const next = line.waiting.shift();
            await firstOf(
              members.map((c) => c.handoffRelease(resource, held, next?.value ?? '', String(ttl), next?.channel ?? '')),
              quorum,
              () => true,
            );
            if (next) return true;
            // Nobody was waiting when it let go: free, or to whoever came in during the release round.
            const late = line.waiting.shift();
            if (late) late.resume('free');
            else line.held = false;
            return true;
          },
        };
      },
      isAcquireFailure: () => false,
      close: async () => {
        for (const client of [...members, ...subscribers]) client.disconnect();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// line hand-off floor (figure 3 only): the hand-off floor with its line on the members, as waiters
// in several processes need it, and the checked floor's reads of the per-call checks in each
// script. An attempt that finds the key held takes its place in the member's line (a ZSET by the
// acquire's ticket); a release pops the head there, sets its value and publishes to it; the waiter
// holds the lock at the 3rd message or, at its next attempt, where a quorum holds its value.
// Nothing else: no lease (a crashed waiter at the head holds the lock handed to it for its ttl),
// no presence, no hand-over request or stamp, no quarantine. What a hand-over with a line on the
// members and the checks costs at the least: quorumlock's figure beside it is the price of the rest.

const LINE_ACQUIRE =
  "local info = redis.call('INFO', 'replication', 'stats') local epoch = redis.call('HMGET', KEYS[3], 'id', 'since', 'run_id', 'replid', 'evicted') " +
  "local held = redis.call('GET', KEYS[1]) if held == ARGV[1] then return 1 end " +
  "if not held then local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] " +
  "if not head or head == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) redis.call('ZREM', KEYS[2], ARGV[1]) return 1 end end " +
  "redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1]) return 0";
const LINE_RELEASE =
  "local info = redis.call('INFO', 'replication') local epoch = redis.call('HMGET', KEYS[3], 'id', 'since', 'run_id', 'replid', 'evicted') " +
  "redis.call('ZREM', KEYS[2], ARGV[1]) if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end " +
  "local head = redis.call('ZPOPMIN', KEYS[2])[1] if not head then return redis.call('DEL', KEYS[1]) end " +
  "redis.call('SET', KEYS[1], head, 'PX', ARGV[2]) redis.call('PUBLISH', string.match(head, '^[^|]+'), head) return 1";
type LineClient = Redis & {
  lineAcquire(lock: string, line: string, epoch: string, value: string, ttl: string, ticket: string): Promise<number>;
  lineRelease(lock: string, line: string, epoch: string, value: string, ttl: string): Promise<number>;
};
/** When a waiter that heard no quorum of hand-overs tries again (a release that ran on a member before its place there). */
const LINE_RETRY_MS = 20;
let lineTicket = 0;

const lineHandoffFloor: Peer = {
  name: 'line hand-off floor',
  settings: {
    defaults: 'the line a ZSET on each member; a release pops the head, sets its value and PUBLISHes; held at the 3rd message; reads of the per-call checks',
    'one-attempt': 'n/a',
  },
  create() {
    throw new Error('the line hand-off floor opens its own connections');
  },
  async open(set) {
    const quorum = Math.floor(set.masters.length / 2) + 1;
    const members = set.masters.map((m) => new Redis({ host: m.host, port: m.port })) as LineClient[];
    const subscribers = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
    for (const client of members) {
      client.defineCommand('lineAcquire', { numberOfKeys: 3, lua: LINE_ACQUIRE });
      client.defineCommand('lineRelease', { numberOfKeys: 3, lua: LINE_RELEASE });
    }
    const channel = `line-floor:${++floorWorker}`;
    const heard = new Map<string, { count: number; won(): void }>();
    for (const subscriber of subscribers) {
      await subscriber.subscribe(channel);
      subscriber.on('message', (_channel: string, value: string) => {
        const waiter = heard.get(value);
        if (waiter && ++waiter.count === quorum) waiter.won();
      });
    }
    let sequence = 0;
    return {
      async acquire(resource, ttl) {
        const [lock, lineKey] = resourceKeys([resource]) as [string, string];
        const value = `${channel}|${++sequence}`;
        // One ticket per acquire, the same on every member: all members order the waiters alike.
        const ticket = String(Date.now() * 1000 + (++lineTicket % 1000));
        const started = now();
        const attempt = () =>
          new Promise<boolean>((resolve) => {
            let yes = 0;
            let answered = 0;
            for (const c of members)
              c.lineAcquire(lock, lineKey, EPOCH_KEY, value, String(ttl), ticket).then(
                (reply) => {
                  if (reply === 1 && ++yes === quorum) resolve(true);
                  if (++answered === members.length && yes < quorum) resolve(false);
                },
                () => ++answered === members.length && yes < quorum && resolve(false),
              );
          });
        const handed = new Promise<'handed'>((resolve) => heard.set(value, { count: 0, won: () => resolve('handed') }));
        while (!(await attempt())) {
          const retry = new Promise<'retry'>((resolve) => setTimeout(() => resolve('retry'), LINE_RETRY_MS));
          if ((await Promise.race([handed, retry])) === 'handed') break;
        }
        heard.delete(value);
        return {
          validityMs: ttl - (now() - started),
          release: async () => {
            await firstOf(
              members.map((c) => c.lineRelease(lock, lineKey, EPOCH_KEY, value, String(ttl))),
              quorum,
              () => true,
            );
            return true;
          },
        };
      },
      isAcquireFailure: () => false,
      close: async () => {
        for (const client of [...members, ...subscribers]) client.disconnect();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// quorumlock (this repository)

const quorumlock: Peer = {
  name: 'quorumlock',
  settings: {
    defaults: 'defaults: retryCount 10, retryDelay 200 ± 100, nodeTimeout 50',
    'one-attempt': 'retryCount 0 (one attempt), nodeTimeout 50',
  },
  create(members, mode = 'defaults') {
    const redlock = new Redlock(members, mode === 'one-attempt' ? { retryCount: 0 } : {});
    return {
      async acquire(resource, ttl) {
        const lock = await redlock.acquire(resource, ttl);
        return { validityMs: lock.remainingMs(), release: async () => (await lock.release()).freed };
      },
      isAcquireFailure: (error) => error instanceof LockAcquireError,
      close: () => redlock.quit(),
    };
  },
};

// ---------------------------------------------------------------------------------------------
// node-redlock v4 (`redlock@4`: CommonJS, bluebird promises, untyped)

/** The slice of node-redlock v4's API used here. */
interface NodeRedlockLock {
  expiration: number;
  unlock(): PromiseLike<void>;
}
interface NodeRedlockInstance {
  lock(resource: string, ttl: number): PromiseLike<NodeRedlockLock>;
}
interface NodeRedlockClass {
  new (clients: Redis[], options?: { driftFactor?: number; retryCount?: number; retryDelay?: number; retryJitter?: number }): NodeRedlockInstance;
  LockError: new (...args: never[]) => Error;
}
const NodeRedlock = createRequire(import.meta.url)('redlock') as NodeRedlockClass;

const nodeRedlock: Peer = {
  name: 'node-redlock',
  settings: {
    defaults: 'defaults: retryCount 10, retryDelay 200 ± 100; no per-member timeout (waits for all members)',
    // Per-call lockWithOptions({ retryCount: 0 }) would be ignored (`options.retryCount || self.retryCount`);
    // the constructor option is honoured.
    'one-attempt': 'constructor retryCount 0 (one attempt); no per-member timeout',
  },
  create(members, mode = 'defaults') {
    const redlock = new NodeRedlock(members, mode === 'one-attempt' ? { retryCount: 0 } : undefined);
    return {
      async acquire(resource, ttl) {
        const lock = await Promise.resolve(redlock.lock(resource, ttl)); // bluebird → native
        return {
          validityMs: lock.expiration - Date.now(),
          release: async () => {
            await Promise.resolve(lock.unlock()); // rejects (LockError) when < quorum released
            return true;
          },
        };
      },
      isAcquireFailure: (error) => error instanceof NodeRedlock.LockError,
      close: async () => undefined,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// @sesamecare-oss/redlock (the maintained fork of node-redlock v5)

const sesame: Peer = {
  name: '@sesamecare-oss/redlock',
  settings: {
    defaults: 'defaults: retryCount 10, retryDelay 200 ± 100 (release retries too); no per-member timeout',
    'one-attempt': 'retryCount 0 (one attempt); no per-member timeout',
  },
  create(members, mode = 'defaults') {
    const redlock = new SesameRedlock(members, mode === 'one-attempt' ? { retryCount: 0 } : {});
    // It emits 'error' for every member that votes against (it installs a no-op listener itself).
    return {
      async acquire(resource, ttl) {
        const lock = await redlock.acquire([resource], ttl);
        return {
          validityMs: lock.expiration - Date.now(),
          release: async () => {
            await lock.release(); // rejects (ExecutionError) when no quorum after its retries
            return true;
          },
        };
      },
      isAcquireFailure: (error) => error instanceof ExecutionError,
      close: async () => undefined,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// redis-semaphore 5.x RedlockMutex: like redlock-universal, a mutex object is bound to one key, so
// one is made per acquire (as its README does), over the members' ioredis clients. Its lock TTL is
// the `lockTimeout` option, so the bench's ttl goes there; everything else is its default.

/** Locks redis-semaphore reported lost (its refresh found the key gone): logged, never thrown. */
let semaphoreLostLocks = 0;

const redisSemaphore: Peer = {
  name: 'redis-semaphore',
  settings: {
    defaults:
      'defaults: acquireTimeout 10000, retryInterval 10, acquireAttemptsLimit ∞ (retries until acquireTimeout); auto-refresh every 0.8 × ttl; no per-member timeout (waits for all members); onLockLost logged (its default throws, which would end the bench)',
    'one-attempt': 'acquireAttemptsLimit 1 (one attempt); no per-member timeout',
  },
  create(members, mode = 'defaults') {
    return {
      async acquire(resource, ttl) {
        const started = now();
        const mutex = new RedlockMutex(members, resource, {
          lockTimeout: ttl,
          ...(mode === 'one-attempt' ? { acquireAttemptsLimit: 1 } : {}),
          onLockLost: (error) => console.error(`redis-semaphore: lock lost (${++semaphoreLostLocks} so far): ${error.message}`),
        });
        await mutex.acquire(); // rejects (TimeoutError) when no quorum before acquireTimeout / the attempts limit
        // It claims no validity (no drift, no elapsed time): what it has is at most ttl from the
        // winning round's SETs, counted here (conservatively) from the acquire() call.
        return {
          validityMs: ttl - (now() - started),
          release: async () => {
            await mutex.release(); // no quorum check: every member's error is swallowed
            return true;
          },
        };
      },
      isAcquireFailure: (error) => error instanceof SemaphoreTimeoutError,
      close: async () => undefined,
    };
  },
};

// ---------------------------------------------------------------------------------------------
// redlock-universal 0.8.5: a RedLock object is bound to one key, so one is made per acquire (as
// its README's createRedlock / createRedlocks do), over one IoredisAdapter per member.

const DEFAULT_DRIFT_FACTOR = 0.01; // redlock-universal's DEFAULTS.CLOCK_DRIFT_FACTOR

const universal: Peer = {
  name: 'redlock-universal',
  settings: {
    defaults: 'defaults: retryAttempts 3, retryDelay 200; adapter timeout 5000 ms per command; waits for every member (allSettled)',
    'one-attempt': 'retryAttempts 0 (one attempt); adapter timeout 5000 ms per command',
  },
  create(members, mode = 'defaults') {
    const adapters = members.map((client) => new IoredisAdapter(client));
    return {
      async acquire(resource, ttl) {
        const lock = createRedlock({ adapters, key: resource, ttl, ...(mode === 'one-attempt' ? { retryAttempts: 0 } : {}) });
        const handle = await lock.acquire();
        // It checks validity against the attempt's own duration before handing out; what it claims
        // is ttl − drift − time spent, counted (conservatively) from the first attempt's start.
        const drift = Math.floor(ttl * DEFAULT_DRIFT_FACTOR) + 2;
        const spent = (handle.metadata?.acquisitionTime ?? 0) + (Date.now() - handle.acquiredAt);
        return { validityMs: ttl - drift - spent, release: () => lock.release(handle) }; // false: < quorum deleted
      },
      isAcquireFailure: (error) => error instanceof LockAcquisitionError,
      close: async () => undefined,
    };
  },
};

export type PeerName =
  | 'raw'
  | 'checked floor'
  | 'hand-off floor'
  | 'line hand-off floor'
  | 'quorumlock'
  | 'node-redlock'
  | '@sesamecare-oss/redlock'
  | 'redis-semaphore'
  | 'redlock-universal'
  | `quorumlock · ${string}`
  | `redlock-universal · ${string}`;

/** The references, which no client can beat: raw, and raw with quorumlock's per-call checks. */
export const REFERENCES: readonly PeerName[] = ['raw', 'checked floor'];
/** raw first, then the checked floor, quorumlock and the peers. */
export const ALL: readonly Peer[] = [raw, checked, quorumlock, nodeRedlock, sesame, redisSemaphore, universal];
/** The reference of figure 3, which no client's hand-over can beat (not in ALL: it only hands over). */
export const HANDOFF_FLOOR: Peer = handoffFloor;
export const LINE_HANDOFF_FLOOR: Peer = lineHandoffFloor;
/** The five clients (no reference). */
export const CLIENTS: readonly Peer[] = ALL.filter((p) => !REFERENCES.includes(p.name));

/**
 * Five new local masters, one ioredis client per master (the members trusted), and the lockers
 * `make` builds on those clients: `run` gets them by name; afterwards they are closed and the
 * masters stopped (bench:batching, bench:cpu, bench:live).
 */
export async function withLockers(make: (clients: Redis[]) => [string, Locker][], run: (lockers: [string, Locker][]) => Promise<void>): Promise<void> {
  const set = await processBackend.start(5);
  const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
  try {
    await Promise.all(clients.map((c) => c.ping()));
    await new library.Redlock(clients).trustMembers();
    const lockers = make(clients);
    await run(lockers);
    for (const [, locker] of lockers) await locker.close();
  } finally {
    for (const client of clients) client.disconnect();
    await set.stop();
  }
}

/** bench:cpu's and bench:live's three: the checked floor, quorumlock and node-redlock 4, each at its defaults. */
export const floorAndNodeRedlock = (clients: Redis[]): [string, Locker][] => [
  ['checked floor', checkedFloor().create(clients)],
  ['quorumlock', quorumlock.create(clients)],
  ['node-redlock', nodeRedlock.create(clients)],
];
