/**
 * The one place that binds a write to an epoch. Every script that writes (acquire, extend,
 * release, leave, fence, trust, restore-fencing, and any verb added later) is sent through
 * `EpochBook.bind`, which puts the id of the epoch this client last read on the member in front
 * of its arguments and the epoch hash after its keys; src/lua/_bound.lua refuses the call in any
 * other epoch before it writes anything. A verb cannot forget: RedisMember has no other way to
 * send a writing script (#write).
 *
 * Why it matters: one call of ours may run 0, 1 or 2 times, on the process it was sent to or on
 * another (ioredis re-sends unanswered commands after a reconnect, possibly to a restarted
 * process; a delayed link delivers a copy late, after a failover: docs/internals.md). A process
 * that restarted empty, a replica promoted, a demoted master resynced, a flushed or evicting
 * server: each begins a new epoch (_epoch.lua), so a copy that lands there writes nothing — not
 * a lock key nobody will release, not a trust of a member that forgot its locks.
 *
 * When no epoch of a member is known yet (the first write of this client on that epoch hash), it
 * is read first (epoch.lua), on the same ordered path: one extra round trip per epoch hash, once.
 * A refusal names the epoch it found: it is adopted, so the next call binds to it. The refused
 * call wrote nothing: while the round that made it still waits, it is sent once more, bound to
 * the epoch found; after that it counts as an error (EpochChangedError). Cleanups (release,
 * leave) are always sent once more: they take away only what is ours (redis-member.ts).
 */
import type { Connection } from '../clients/index.js';
import { epochChangedError, notMasterError } from '../errors.js';

/** What the client knows of one epoch hash of a member. */
interface Known {
  id: string;
  /** The quarantine (ms) this epoch was seen past, by an acquire's reply; -1: not seen past any. */
  settledFor: number;
}

/** The reply prefixes of _bound.lua's refusals. */
const EPOCH_REFUSAL = 'QUORUMLOCK_EPOCH ';
const ROLE_REFUSAL = 'QUORUMLOCK_ROLE';

/** One book per client, however many Redlocks share it: the epochs are facts of its server. */
const books = new WeakMap<object, EpochBook>();

/** Reads (and begins, where there is none) the epoch of one epoch hash: epoch.lua. */
export type EpochReader = (epochKey: string) => Promise<string>;

/**
 * The book of `client`'s epochs, made on first use; `read` is one more way to read them, held
 * weakly (EpochBook.addReader): its owner keeps it. A client whose calls share one socket and
 * one epoch hash (`single`: a server, not a Cluster) has it read at once and at every new
 * connection.
 */
export function epochBookOf(client: Pick<Connection, 'state' | 'on'>, member: string, read: EpochReader, single?: string): EpochBook {
  const existing = books.get(client);
  const book = existing ?? new EpochBook(member);
  book.addReader(read);
  if (existing !== undefined) return book;
  books.set(client, book);
  if (single !== undefined) {
    client.on('ready', () => book.refresh(single));
    // Not on a client that is not connected yet (lazyConnect): the Redlock must not connect it.
    if (client.state === 'ready') book.refresh(single);
  }
  return book;
}

export class EpochBook {
  readonly #known = new Map<string, Known>();
  readonly #reading = new Map<string, Promise<string>>();
  readonly #member: string;
  /**
   * The members' readers (one per RedisMember on this client, each kept by its member), held
   * weakly: the client outlives the Redlocks made on it, and a book that held its first
   * member's reader kept that member alive. Any one reads the same epochs, on the same connection.
   */
  #readers: WeakRef<EpochReader>[] = [];
  /** How many readers there may be before the next sweep drops those collected (twice the live ones). */
  #sweepAt = 8;

  constructor(member: string) {
    this.#member = member;
  }

  /** One more way to read the epochs: its owner keeps it alive for as long as it may be used. */
  addReader(read: EpochReader): void {
    // A Redlock per job adds one each: the collected ones go, a sweep per doubling.
    if (this.#readers.length >= this.#sweepAt) {
      this.#readers = this.#readers.filter((reader) => reader.deref() !== undefined);
      this.#sweepAt = Math.max(8, 2 * this.#readers.length);
    }
    this.#readers.push(new WeakRef(read));
  }

  /** Reads with the newest reader still alive, dropping those that are gone. */
  #read(epochKey: string): Promise<string> {
    while (this.#readers.length > 0) {
      const read = this.#readers.at(-1)!.deref();
      if (read) return read(epochKey);
      this.#readers.pop();
    }
    // Only the refresh at a new connection comes here: a member that binds a write has a reader.
    return Promise.reject(new Error(`quorumlock: no Redlock reads ${this.#member}'s epochs now`));
  }

  /**
   * Reads `epochKey`'s epoch now, in the background, and binds later writes to it: at a new
   * connection (which may reach another process), so that the first write there needs no read.
   */
  refresh(epochKey: string): void {
    this.#readOnce(epochKey).catch(() => undefined);
  }

  /** The id of `epochKey`'s epoch if an acquire saw it past a quarantine of `quarantineMs`, else ''. */
  settledId(epochKey: string, quarantineMs: number): string {
    const known = this.#known.get(epochKey);
    return known !== undefined && known.settledFor === quarantineMs ? known.id : '';
  }

  /** An acquire's reply: epoch `id` of `epochKey` is past a quarantine of `quarantineMs`. */
  settle(epochKey: string, id: string, quarantineMs: number): void {
    const known = this.#known.get(epochKey);
    if (known !== undefined && known.id === id) known.settledFor = quarantineMs;
  }

  /**
   * Sends `send(epochId, failed)` bound to the epoch last read for `epochKey` (read first when none
   * is known). Synchronous when one is known: the call is written in the tick it was made, so
   * calls keep their order on the connection. Calls made while a read is pending chain on that
   * one read, in the order they were made. `send` settles its call in the one reaction it has
   * (RedisMember #call), and hands what it fails with to `failed`: the refusal handling below, with
   * no promise of its own per call. What the call fails with in the end goes to `fail` if given
   * (what it returns is the call's result), else it is thrown.
   */
  bind<T>(
    epochKey: string,
    send: (epochId: string, failed: (error: unknown) => T | Promise<T>) => Promise<T>,
    open?: () => boolean,
    fail?: (error: unknown) => T,
  ): Promise<T> {
    const failed = (error: unknown): T | Promise<T> => {
      const refusal = this.#refusal(epochKey, error);
      // The call wrote nothing. While its round still waits for it, it is sent once more, bound
      // to the epoch found, as a call made now would be. A refusal that comes after the round is
      // over (a re-sent call, a late copy) is not sent again: a write nobody waits for is what
      // left a full-ttl key behind a released lock.
      if (refusal.id !== undefined && open?.()) return send(refusal.id, (again) => end(fail, this.#refusal(epochKey, again).error));
      return end(fail, refusal.error);
    };
    const known = this.#known.get(epochKey);
    if (known !== undefined) return send(known.id, failed);
    return this.#readOnce(epochKey).then(
      (id) => send(id, failed),
      (error: unknown) => end(fail, error),
    );
  }

  #readOnce(epochKey: string): Promise<string> {
    let reading = this.#reading.get(epochKey);
    if (reading === undefined) {
      reading = this.#read(epochKey).then(
        (id) => {
          this.#reading.delete(epochKey);
          this.adopt(epochKey, id);
          return id;
        },
        (error: unknown) => {
          this.#reading.delete(epochKey);
          // epoch.lua never answers with an epoch refusal; a non-master is typed here.
          throw this.#refusal(epochKey, error).error;
        },
      );
      this.#reading.set(epochKey, reading);
    }
    return reading;
  }

  /** Binds the next writes of `epochKey` to epoch `id` (read by the caller: an operator's call). */
  adopt(epochKey: string, id: string): void {
    if (this.#known.get(epochKey)?.id !== id) this.#known.set(epochKey, { id, settledFor: -1 });
  }

  /**
   * What a failed call says: for a refusal of _bound.lua, the epoch it found (`id`, adopted, so the
   * next call binds to it) and the typed error to end with; a non-master as a typed error; any
   * other error as it is.
   */
  #refusal(epochKey: string, error: unknown): { id?: string; error: unknown } {
    const message = error instanceof Error ? error.message : '';
    if (message.startsWith(ROLE_REFUSAL)) return { error: notMasterError(this.#member) };
    if (!message.startsWith(EPOCH_REFUSAL)) return { error };
    const id = message.slice(EPOCH_REFUSAL.length).trim();
    const was = this.#known.get(epochKey)?.id;
    this.adopt(epochKey, id);
    return { id, error: epochChangedError(this.#member, was, id) };
  }
}

/** How a bound call ends that failed for good: `fail`'s result, or the error thrown. */
function end<T>(fail: ((error: unknown) => T) | undefined, error: unknown): T {
  if (fail === undefined) throw error;
  return fail(error);
}
