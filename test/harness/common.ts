/** What both backends share: finding a port, and starting a set of masters all-or-nothing. */
import { createServer } from 'node:net';
import type { Master, MasterSet } from './types.js';

/** A port that was free a moment ago; onFreePort() retries if the server loses the race for it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Runs `start` on a free port, up to 5 ports; an error `fatal` says is final stops at once. */
export async function onFreePort<T>(
  start: (port: number) => Promise<T>,
  fatal: (error: unknown) => boolean = () => false,
): Promise<{ port: number; started: T }> {
  let lastError: unknown;
  for (let tries = 0; tries < 5; tries++) {
    const port = await freePort();
    try {
      return { port, started: await start(port) };
    } catch (error) {
      if (fatal(error)) throw error;
      lastError = error; // most likely the port was taken between freePort() and bind
    }
  }
  throw lastError;
}

/** Starts `count` masters; if any fails, stops those that started (nobody else would) and throws. */
export async function startSet(count: number, startOne: () => Promise<Master>): Promise<MasterSet> {
  const results = await Promise.allSettled(Array.from({ length: count }, startOne));
  const masters = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await Promise.allSettled(masters.map((master) => master.stop()));
    throw failed.reason;
  }
  return {
    masters,
    async stop() {
      await Promise.all(masters.map((master) => master.stop()));
    },
  };
}
