/**
 * Reentrancy: inside the work of a using() that holds some resources, a `{ reentrant: true }`
 * acquire of the same resources gets a nested handle at once, with no round trip. The work of
 * each using() runs in an AsyncLocalStorage frame naming its lock, so code called from it (across
 * awaits, timers and callbacks started inside it) finds the lock it runs under.
 *
 * Why a nested handle is safe: it is not a second lock. It makes no claim on any member and has
 * no validity of its own: remainingMs(), signal, fence and extend() are the outer lock's. It
 * cannot outlive the outer lock (once that is released or lost it reads 0 and its signal is the
 * outer's, aborted), and its release() only ends the nested handle: the outer lock stays held
 * until the outer using() ends. So the mutual exclusion argument is the outer lock's, unchanged.
 *
 * The storage exists only for a Redlock made with maxReentrancy > 0: on Node 20 an active
 * AsyncLocalStorage makes every promise of the process slower, which a Redlock that never nests
 * must not pay (settings.ts, maxReentrancy).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { LockExtendError, ReentrancyError } from '../errors.js';
import { Lock, type LockContext, type ReleaseResult } from './lock.js';

/** One held lock of the current async context, and the frames it runs inside. */
interface Frame {
  readonly key: string;
  readonly lock: Lock;
  /** 0 for a lock acquired on the members; n for the n-th nested handle inside it. */
  readonly depth: number;
  readonly parent: Frame | undefined;
}

/** The same resources, in any order, name the same lock (a Lock's resources are all or nothing). */
const keyOf = (resources: readonly string[]) => (resources.length === 1 ? resources[0]! : [...resources].sort().join('\u0000'));

export function reentrancyError(resources: readonly string[], depth: number, message: string): ReentrancyError {
  return new ReentrancyError(resources, depth, message);
}

export class Reentrancy {
  readonly #frames = new AsyncLocalStorage<Frame>();

  constructor(readonly maxDepth: number) {}

  /** The frame of the current async context that holds exactly `resources`, if any. */
  #find(resources: readonly string[]): Frame | undefined {
    const key = keyOf(resources);
    for (let frame = this.#frames.getStore(); frame; frame = frame.parent) if (frame.key === key) return frame;
    return undefined;
  }

  /**
   * A nested handle for `resources` when the current context holds them, or undefined (acquire
   * on the members then). Throws a ReentrancyError past maxDepth, when the lock the context
   * holds is no longer held (the work under it should have stopped: its signal said so), or when
   * the call asks for what the held lock does not give: exclusive inside a shared lock (an
   * upgrade), or a fencing token inside an unfenced lock (a nested handle has none of its own).
   */
  nest(context: LockContext, resources: readonly string[], wants: { shared: boolean; fencing: boolean }): { lock: NestedLock; depth: number } | undefined {
    const frame = this.#find(resources);
    if (!frame) return undefined;
    const depth = frame.depth + 1;
    if (depth > this.maxDepth)
      throw reentrancyError(
        resources,
        depth,
        `reentrant acquire of ${resources.join(', ')} would nest ${depth} deep, more than maxReentrancy (${this.maxDepth})`,
      );
    const outer = frame.lock instanceof NestedLock ? frame.lock.outer : frame.lock;
    if (!outer.held || outer.signal.aborted)
      throw reentrancyError(
        resources,
        depth,
        `reentrant acquire of ${resources.join(', ')}: the lock this context holds is no longer held (${outer.released ? 'released' : 'lost or expired'})`,
      );
    // A shared lock cannot stand in for an exclusive one: that would be an upgrade, with other
    // readers possibly holding beside it (docs/shared-locks.md). The other way round is fine.
    if (outer.shared && !wants.shared)
      throw reentrancyError(
        resources,
        depth,
        `reentrant exclusive acquire of ${resources.join(', ')} inside a shared lock of them: a shared lock cannot be upgraded; take the outer lock exclusive`,
      );
    // Nor can an unfenced lock stand in for a fenced one: the nested handle's fence is the outer
    // lock's, and there is none, which a caller passing it on would not notice (docs/reentrancy.md).
    if (wants.fencing && outer.fence === undefined)
      throw reentrancyError(
        resources,
        depth,
        `reentrant fenced acquire of ${resources.join(', ')} inside an unfenced lock of them: a nested handle has no token of its own; take the outer lock with fencing: true`,
      );
    return { lock: new NestedLock(context, outer, depth), depth };
  }

  /** Runs `work` with `lock` (at `depth`) known to everything it calls. */
  run<T>(lock: Lock, depth: number, work: () => Promise<T>): Promise<T> {
    return this.#frames.run({ key: keyOf(lock.resources), lock, depth, parent: this.#frames.getStore() }, work);
  }
}

/**
 * A handle on a lock the current context already holds: everything is the outer lock's, except
 * that release() ends only this handle (freed: false, no call to any member).
 */
export class NestedLock extends Lock {
  readonly outer: Lock;
  readonly depth: number;
  #released = false;

  /** @internal */
  constructor(context: LockContext, outer: Lock, depth: number) {
    super(context, {
      id: `${outer.id}.${depth}`,
      resources: outer.resources,
      value: outer.value,
      deadline: 0,
      votes: outer.votes,
      fence: outer.fence,
      borrowed: true,
    });
    this.outer = outer;
    this.depth = depth;
  }

  override remainingMs(): number {
    return this.#released ? 0 : this.outer.remainingMs();
  }

  override get released(): boolean {
    return this.#released || this.outer.released;
  }

  override get votes(): Lock['votes'] {
    return this.outer.votes;
  }

  override get signal(): AbortSignal {
    return this.outer.signal;
  }

  /**
   * Extends the outer lock (the only lock there is) when `ttl` reaches past what it has left;
   * resolves with this handle. Never shortens it: the outer using() keeps it extended on its own
   * schedule, which a shorter deadline set from inside would outrun.
   */
  override extend(ttl: number): Promise<this> {
    if (this.#released) return Promise.reject(new LockExtendError(this.resources, 'released', [], 0));
    if (ttl <= this.outer.remainingMs()) return Promise.resolve(this);
    return this.outer.extend(ttl).then(() => this);
  }

  /** Ends this handle only: the outer lock stays held until its own release. Calls no member. */
  override release(): Promise<ReleaseResult> {
    this.#released = true;
    return Promise.resolve({ freed: false, votes: [], elapsedMs: 0 });
  }

  override toJSON(): ReturnType<Lock['toJSON']> & { nested: number } {
    return { ...this.outer.toJSON(), id: this.id, remainingMs: this.remainingMs(), released: this.released, nested: this.depth };
  }

  override async [Symbol.asyncDispose](): Promise<void> {
    this.#released = true;
  }
}
