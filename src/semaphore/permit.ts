/**
 * The handle of a semaphore permit: a Lock (on the permit's own key, src/store/keys.ts
 * permitResource) that also says which permit it is. Everything else (remainingMs, extend,
 * release, signal, fence, `await using`) is the Lock's, unchanged.
 */
import { inspect } from 'node:util';
import { Lock, type HeldLock, type LockContext } from '../lock/lock.js';

/** A held permit of a semaphore: a {@link Lock} on that permit, with its index. */
export class Permit extends Lock {
  /** Which permit this is: 0 .. permits − 1. */
  readonly permit: number;
  /** The semaphore's name. */
  readonly semaphore: string;

  /** @internal Made by Semaphore.acquire() and using(), never by users. */
  constructor(context: LockContext, held: HeldLock, semaphore: string, permit: number) {
    super(context, held);
    this.semaphore = semaphore;
    this.permit = permit;
  }

  /** What JSON.stringify shows: the Lock's fields (never the value), the semaphore and the permit. */
  override toJSON(): ReturnType<Lock['toJSON']> & {
    /** `permit.semaphore`. */
    semaphore: string;
    /** `permit.permit`. */
    permit: number;
  } {
    return { ...super.toJSON(), semaphore: this.semaphore, permit: this.permit };
  }

  /** What console.log and util.inspect show: toJSON()'s fields, never the value. */
  override [inspect.custom](): string {
    return `Permit ${inspect(this.toJSON())}`;
  }
}
