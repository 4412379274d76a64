/** Small helpers shared by the integration tests. */
import type Redis from 'ioredis';
import { expect } from 'vitest';
import { LockAcquireError } from '../../src/index.js';

let counter = 0;
/** A resource name no other test uses, so tests never see each other's keys. */
export const fresh = (label: string): string => `${label}:${++counter}`;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The LockAcquireError `promise` rejects with; fails the test if it resolves or rejects otherwise. */
export async function errorOf(promise: Promise<unknown>): Promise<LockAcquireError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LockAcquireError);
  return error as LockAcquireError;
}

/** Retries `attempt` every 50 ms until it resolves; rethrows its last error after `timeoutMs`. */
export async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

/** Calls of the scripts on one member, from Redis' own command statistics. */
export async function scriptCalls(member: Redis): Promise<number> {
  const info = await member.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}
