/**
 * Batching: the exclusive acquires and the releases a tick makes on one connection go out as one
 * call of the batch script (store/batch.ts), bound to the same process as every copy (binding.ts),
 * at the end of the tick; the tick's first such call goes out alone, at once. A call to a member
 * costs the client far more than the script costs the server (ioredis' command, its promise, the
 * socket write: docs/performance.md), so at 16 or more locks in flight this was most of what a
 * cycle cost the client.
 *
 * What must not change, and why it does not:
 * - each call runs as it would alone: its own KEYS and ARGV, its own epoch binding, its own
 *   reply or error (the batch script's header has the argument);
 * - the order of calls on a connection: a call that is not batched first sends the batch before it
 *   (RedisMember #call), and a batch runs its calls in the order they were made, so a release
 *   still never reaches a member before the acquire it undoes;
 * - where a call may run: only the process its copies were loaded into. A batch is one more bound
 *   copy, loaded with them (same nonce, same process), called by EVALSHA only, and only with the
 *   copies its calls were made with: a NOSCRIPT fails each call, which marks the copies missing.
 * One batch per connection, shared by its members (as the binding is): the order holds on the
 * connection, not only per member.
 *
 * The connection's tick is kept here too, for every call of ours (batched or not): the tick's first
 * call corks the socket where the adapter can (ioredis), and the tick's end sends the batch and
 * uncorks, so the tick's calls share one write. One home, per connection: members of several
 * Redlocks on one client share it, and a tick costs one nextTick however many calls it made.
 */
import { nextTick } from 'node:process';
import type { Connection } from '../clients/index.js';
import { batchAnswer, batchArgs, type BatchCall, type Batched } from '../store/batch.js';
import type { BoundCopies } from './binding.js';

/** The most calls, and keys, in one batch: it runs as one script, which blocks its server while it runs. */
export const BATCH_LIMIT = 64;
const BATCH_KEYS = 640;

/** Calls per socket write in a burst (enter). Each of our calls is 1 to 3 buffers for ioredis (the one adapter that corks). */
export const CORK_CALLS = 256;

interface Pending extends BatchCall {
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

const batches = new WeakMap<object, CallBatch>();

/** The connection's batch (one per client, however many members and Redlocks share it). */
export function batchOf(client: Connection): CallBatch {
  let batch = batches.get(client);
  if (batch === undefined) batches.set(client, (batch = new CallBatch(client)));
  return batch;
}

export class CallBatch {
  readonly #client: Connection;
  /** The calls made in this tick, in order, and the copies they were made with. */
  #calls: Pending[] = [];
  #keys = 0;
  /** Whether a call of ours was made in this tick: its end is queued (enter). */
  #ticking = false;
  /** Whether a batched call was made in this tick: the first goes out alone, at once (see send). */
  #batching = false;
  /** How to uncork the socket corked for this tick, if it is; and the calls written into it since. */
  #uncork: (() => void) | undefined;
  #corked = 0;
  #copies: BoundCopies | undefined;
  /**
   * Off for good after an ACL refused a batch for the keys of some of its calls: one call's
   * refusal must not be every call's.
   */
  #off = false;

  constructor(client: Connection) {
    this.#client = client;
  }

  /**
   * Called before each call of ours on the connection, batched or not (RedisMember #call). The
   * tick's first corks the socket until the tick ends. libuv writes at most 1024 buffers per
   * writev: a burst of thousands of calls in one corked tick would go out a thousand per
   * event-loop turn, so a burst is uncorked every CORK_CALLS calls: one write per CORK_CALLS
   * calls, all in this tick, still in call order.
   */
  enter(): void {
    if (!this.#ticking) {
      this.#ticking = true;
      nextTick(CallBatch.#endOfTick, this);
      this.#uncork = this.#client.cork?.();
      this.#corked = 0;
    } else if (this.#uncork !== undefined && ++this.#corked >= CORK_CALLS) {
      this.#corked = 0;
      this.#uncork();
      this.#uncork = this.#client.cork?.();
    }
  }

  /**
   * Sends `script` with `keys` and `args` in this tick's batch, by `copies` (the bound copies the
   * member's call would use): the reply or error its own EVALSHA would have given. After enter().
   */
  send(copies: BoundCopies, script: Batched, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    if (this.#off) {
      this.flush(); // calls queued before the refusal was read go first
      return this.#alone(copies, { script, keys, args });
    }
    // The tick's first batched call goes out alone, at once: one lock at a time pays nothing for
    // batching. The calls after it in the tick join the batch, which goes out after it.
    if (!this.#batching) {
      this.#batching = true;
      return this.#alone(copies, { script, keys, args });
    }
    // A batch is one set of copies: a call made with others (rebound in this tick) starts a new one.
    if (this.#copies !== copies || this.#calls.length >= BATCH_LIMIT || this.#keys + keys.length > BATCH_KEYS) this.flush();
    if (this.#calls.length === 0) this.#copies = copies;
    this.#keys += keys.length;
    return new Promise((resolve, reject) => this.#calls.push({ script, keys, args, resolve, reject }));
  }

  /** One call by its own copy. */
  #alone(copies: BoundCopies, call: BatchCall): Promise<unknown> {
    return this.#evalsha(copies.shas[call.script], call.keys, call.args);
  }

  /** EVALSHA on the client; a client that throws instead of rejecting still gives a rejection, so every call ends. */
  #evalsha(sha: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return this.#client.evalsha!(sha, keys, args);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The tick's batch first, so that it goes out in the same write as the rest; then the uncork. */
  static #endOfTick(batch: CallBatch): void {
    batch.#ticking = false;
    batch.#batching = false;
    batch.flush();
    const uncork = batch.#uncork;
    batch.#uncork = undefined;
    uncork?.();
  }

  /** Hands the batch to the client now (before a call that is not batched, and at the tick's end). */
  flush(): void {
    const calls = this.#calls;
    const copies = this.#copies;
    if (calls.length === 0 || copies === undefined) return;
    this.#calls = [];
    this.#keys = 0;
    this.#copies = undefined;
    // One call, or none may go together any more: each as its own copy, in order.
    if (calls.length === 1 || this.#off) {
      for (const call of calls) this.#alone(copies, call).then(call.resolve, call.reject);
      return;
    }
    const { keys, args } = batchArgs(calls);
    void this.#evalsha(copies.shas.quorumlockBatch, keys, args).then(
      (reply) =>
        calls.forEach((call, index) => {
          const answer = batchAnswer(reply, index);
          if ('error' in answer) call.reject(answer.error);
          else call.resolve(answer.reply);
        }),
      (error: { message?: string }) => {
        // An ACL that refused the batch for a key of one of its calls: from now on the calls go one
        // by one (batches sent before this was read fail whole too). What else refuses a batch
        // (LOADING, BUSY, OOM) would refuse each call alone too; NOSCRIPT is the copies' own case,
        // handled by each call.
        if (error?.message?.startsWith('NOPERM')) this.#off = true;
        for (const call of calls) call.reject(error);
      },
    );
  }
}
