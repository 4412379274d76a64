/**
 * One simulated Redis master: its keys, its own clock, and SIGSTOP-like pauses. The quorumlock
 * scripts (src/lua/*.lua) are re-implemented here in JS with the same replies, as far as the
 * simulation reaches them:
 *
 * - acquire.lua: the all-or-nothing SET PX, the refusal, and the epoch marker with the restart
 *   quarantine (the epoch the client last saw settled skips the check). Arguments are read and
 *   replies built by src/store/protocol.ts, as the client decodes them. Lines of waiters and fence readings are not
 *   simulated: the clients use tryAcquire (retryCount 0, so never a lease > 0) without fencing.
 *   A call that would need them stops the simulation (`fatal`), never answers silently.
 * - release.lua (compare-and-delete; no line can exist, so nothing to PUBLISH), extend.lua,
 *   leave.lua (nobody is ever in line: a no-op that answers 1) and trust.lua.
 *
 * Time: member-local time is `offsetMs + rate × true time`, read in whole ms as Redis' mstime()
 * is. A key set with PX ttl at local time L is gone once local time exceeds L + ttl (Redis:
 * expired when now > when), so a member with rate > 1 drops keys early in true time. Expiry is
 * evaluated lazily, whenever a script touches the key: scripts are the only observers, so this
 * is the same as Redis' active expiry as far as any client can tell.
 */
import type { ManualClock } from '../../src/index.js';
import { acquireReply, extendReply, readAcquireArgs, readExtendArgs, readReleaseArgs, readTrustArgs } from '../../src/store/protocol.js';
import { KEYS_PER_RESOURCE } from '../../src/store/keys.js';

export interface MemberSpec {
  /** Appears in memberId as host:port/0. */
  host: string;
  port: number;
  /** Member-local ms per true ms: 1.05 = the clock runs 5 % fast. */
  rate: number;
  /** Member-local time at true time 0. */
  offsetMs: number;
}

interface Entry {
  value: string;
  /** Member-local ms; Infinity = no expiry. */
  expiresAt: number;
}

type Script = (member: SimMember, keys: string[], args: string[]) => unknown;

export class SimMember {
  readonly #strings = new Map<string, Entry>();
  readonly #hashes = new Map<string, Map<string, string>>();
  #paused = false;
  #queue: (() => void)[] = [];
  /** Set when a script was asked for something the simulation does not model. */
  fatal: Error | undefined;

  constructor(
    readonly clock: ManualClock,
    readonly spec: MemberSpec,
  ) {}

  /** Redis' mstime(): whole ms on this member's clock. */
  localNow(): number {
    return Math.floor(this.spec.offsetMs + this.spec.rate * this.clock.now());
  }

  /** Runs a command now, or queues it until resume() when paused (SIGSTOP). */
  execute(job: () => void): void {
    if (this.#paused) this.#queue.push(job);
    else job();
  }

  pause(): void {
    this.#paused = true;
  }

  /** SIGCONT: queued commands run at once, in arrival order. */
  resume(): void {
    this.#paused = false;
    const queued = this.#queue;
    this.#queue = [];
    for (const job of queued) job();
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** The value of `key` right now (for diagnostics; no side effects beyond lazy expiry). */
  peek(key: string): string | undefined {
    return this.#get(key);
  }

  run(name: string, keys: string[], args: string[]): unknown {
    const script = scripts[name];
    if (!script) throw new Error(`sim: unknown script ${name}`);
    return script(this, keys, args);
  }

  // --- the Redis commands the scripts use ------------------------------------------------------

  #entry(key: string): Entry | undefined {
    const entry = this.#strings.get(key);
    if (entry && this.localNow() > entry.expiresAt) {
      this.#strings.delete(key);
      return undefined;
    }
    return entry;
  }

  #get(key: string): string | undefined {
    return this.#entry(key)?.value;
  }

  /** PTTL: -2 missing, -1 no expiry, else ms left (never negative). */
  pttl(key: string): number {
    const entry = this.#entry(key);
    if (!entry) return -2;
    if (entry.expiresAt === Infinity) return -1;
    return Math.max(0, entry.expiresAt - this.localNow());
  }

  get(key: string): string | undefined {
    return this.#get(key);
  }

  setPx(key: string, value: string, ttlMs: number): void {
    this.#strings.set(key, { value, expiresAt: this.localNow() + ttlMs });
  }

  del(key: string): number {
    return this.#entry(key) && this.#strings.delete(key) ? 1 : 0;
  }

  pexpire(key: string, ttlMs: number): void {
    const entry = this.#entry(key);
    if (entry) entry.expiresAt = this.localNow() + ttlMs;
  }

  exists(key: string): boolean {
    return this.#entry(key) !== undefined || this.#hashes.has(key);
  }

  hget(key: string, field: string): string | undefined {
    return this.#hashes.get(key)?.get(field);
  }

  hset(key: string, field: string, value: string | number): void {
    let hash = this.#hashes.get(key);
    if (!hash) this.#hashes.set(key, (hash = new Map()));
    hash.set(field, String(value));
  }

  unsupported(what: string): never {
    this.fatal ??= new Error(`sim: ${what} is not simulated`);
    throw this.fatal;
  }
}

/** KEYS of one resource-set call: KEYS_PER_RESOURCE per resource (keys.ts, resourceKeys), plus the epoch key. */
function lockKeyCount(keys: string[], extra: number, name: string): number {
  const n = (keys.length - extra) / KEYS_PER_RESOURCE;
  if (n < 1 || !Number.isInteger(n)) throw new Error(`quorumlock: ${name}: expected ${KEYS_PER_RESOURCE} keys per resource, got ${keys.length}`);
  return n;
}

const scripts: Record<string, Script> = {
  // acquire.lua
  quorumlockAcquire(m, keys, args) {
    const n = lockKeyCount(keys, 1, 'acquire');
    const epoch = keys[keys.length - 1]!;
    const { value, ttlMs, waiter, quarantineMs, fencing, settled } = readAcquireArgs(args);
    if (waiter.leaseMs > 0) m.unsupported('a place in the line of waiters (lease > 0: acquire with retries)');
    if (fencing) m.unsupported('fencing');
    if (readAcquireArgs(args).handover) m.unsupported('a handover request (only in line)');
    let heldFor = -1;
    for (let i = 0; i < n; i++) {
      const pttl = m.pttl(keys[i]!);
      if (pttl !== -2) heldFor = Math.max(heldFor, pttl, 0);
      // Lines exist only once somebody joined one (lease > 0), which never happens here.
      if (m.exists(keys[n + i]!)) m.unsupported('a line of waiters');
      // Shared holders exist only once a shared acquire ran (quorumlockAcquireShared), which is not simulated.
      if (m.exists(keys[3 * n + i]!)) m.unsupported('shared holders');
    }
    // A second run of the same call that finds its whole hold is granted again, untouched; a
    // refusal says whether part of it is here (_acquired.lua, holdsAll and refused).
    let own = 0;
    for (let i = 0; i < n; i++) if (m.get(keys[i]!) === value) own++;
    if (heldFor !== -1 && own < n) return acquireReply.refused('taken', heldFor, -1, '', -1, own > 0);
    if (own < n) for (let i = 0; i < n; i++) m.setPx(keys[i]!, value, ttlMs);
    if (quarantineMs === 0) return acquireReply.settled();
    // The epoch's id is its since (unique enough here: the simulation never restarts a member twice in a ms).
    let since = m.hget(epoch, 'since');
    // The epoch this client already saw past its quarantine: still past it.
    if (since !== undefined && since === settled) return acquireReply.settled();
    if (since === undefined) {
      since = String(m.localNow());
      m.hset(epoch, 'since', since);
    }
    const left = m.hget(epoch, 'genesis') === '1' ? 0 : Math.max(0, Number(since) + quarantineMs - m.localNow());
    return acquireReply.locked(left, since);
  },

  // release.lua (no line can exist, so there is nobody to PUBLISH to)
  quorumlockRelease(m, keys, args) {
    const n = lockKeyCount(keys, 1, 'release');
    const { value } = readReleaseArgs(args);
    let deleted = 0;
    for (let i = 0; i < n; i++) {
      if (m.get(keys[i]!) === value) deleted += m.del(keys[i]!);
    }
    return deleted;
  },

  // extend.lua
  quorumlockExtend(m, keys, args) {
    const { value, ttlMs } = readExtendArgs(args);
    for (const key of keys) {
      const held = m.get(key);
      if (held !== value) return extendReply(held === undefined ? 'gone' : 'taken');
    }
    for (const key of keys) m.pexpire(key, ttlMs);
    return extendReply('extended');
  },

  // leave.lua: nobody is ever in line here
  quorumlockLeave(_m, keys) {
    lockKeyCount(keys, 1, 'leave');
    return 1;
  },

  // trust.lua
  quorumlockTrust(m, keys, args) {
    const { mode, n: quarantineMs } = readTrustArgs(args);
    if (mode === 'floor') return m.unsupported('fencing');
    const now = m.localNow();
    const sinceText = m.hget(keys[0]!, 'since');
    if (sinceText === undefined) m.hset(keys[0]!, 'since', now);
    const left = sinceText === undefined || m.hget(keys[0]!, 'genesis') === '1' ? 0 : Math.max(0, Number(sinceText) + quarantineMs - now);
    m.hset(keys[0]!, 'genesis', '1');
    return left;
  },

  quorumlockFence(m) {
    return m.unsupported('fencing');
  },

  // Defined on every client (store/scripts.ts), never called by the simulation's exclusive locks.
  quorumlockAcquireShared(m) {
    return m.unsupported('shared locks');
  },
  quorumlockExtendShared(m) {
    return m.unsupported('shared locks');
  },
  quorumlockElection(m) {
    return m.unsupported('elections');
  },
};

export const scriptNames = Object.keys(scripts);
