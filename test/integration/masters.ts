/** Masters plus one ioredis client per master, as a test uses them. */
import Redis from 'ioredis';
import { MAX_TTL_MS, Redlock, type RedlockOptions } from '../../src/index.js';
import { startMasters, type Master, type StartOptions } from '../harness/index.js';

export interface TestMasters {
  masters: Master[];
  clients: Redis[];
  /** A second, independent set of clients to the same masters (another process, in effect). */
  connect(): Redis[];
  /** The value of `key` on every master (null = absent). Waits for paused masters: resume first. */
  valuesOf(key: string): Promise<(string | null)[]>;
  /** Resumes every master and waits until each has run what was queued for it. */
  resumeAll(): Promise<void>;
  /**
   * Between tests that pause, kill or restart masters: every master running and resumed, the
   * clients reconnected, and the members trusted again (a restart started a new epoch).
   */
  heal(): Promise<void>;
  close(): Promise<void>;
}

export function client(master: Master): Redis {
  // Defaults a service would use; reconnection is ioredis' own.
  const redis = new Redis({ host: master.host, port: master.port, lazyConnect: false });
  // Killed masters refuse reconnects; a service would log these, the tests expect them.
  redis.on('error', () => {});
  return redis;
}

/**
 * Declares brand-new masters trusted, as an operator does for a new deployment (README,
 * "Restart quarantine"): otherwise they count only once maxLockTtl has passed.
 */
export async function trust(clients: Redis[]): Promise<void> {
  const results = await new Redlock(clients, { maxLockTtl: MAX_TTL_MS }).trustMembers();
  if (results.some((result) => !result.trusted)) throw new Error(`could not trust the masters: ${JSON.stringify(results)}`);
}

export async function startTestMasters(count: number, options?: StartOptions): Promise<TestMasters> {
  const set = await startMasters(count, options);
  const opened: Redis[] = [];
  const connect = () => {
    const clients = set.masters.map(client);
    opened.push(...clients);
    return clients;
  };
  const clients = connect();
  await Promise.all(clients.map((c) => c.ping()));
  await trust(clients);
  return {
    masters: set.masters,
    clients,
    connect,
    valuesOf: (key) => Promise.all(clients.map((c) => c.get(key))),
    async resumeAll() {
      await Promise.all(set.masters.map((master) => master.resume()));
      // A PING travels behind everything queued on the same connection: when it returns,
      // the member has run the late commands too.
      await Promise.all(clients.map((c) => c.ping()));
    },
    async heal() {
      await Promise.all(set.masters.map((master) => master.resume()));
      await Promise.all(set.masters.map(async (master) => master.running || master.restart()));
      await Promise.all(clients.map((c) => c.ping()));
      await trust(clients);
    },
    async close() {
      for (const c of opened) c.disconnect();
      await set.stop();
    },
  };
}

/**
 * The Redlocks a test file opens on its masters, each with its own connections (another process,
 * in effect) unless given some; quitAll() after each test.
 */
export function redlocksOn(servers: () => TestMasters): { client(options?: RedlockOptions, clients?: Redis[]): Redlock; quitAll(): Promise<void> } {
  const opened: Redlock[] = [];
  return {
    client(options = {}, clients = servers().connect()) {
      const redlock = new Redlock(clients, options);
      opened.push(redlock);
      return redlock;
    },
    quitAll: async () => {
      await Promise.all(opened.splice(0).map((redlock) => redlock.quit()));
    },
  };
}

/**
 * redis-server arguments for masters whose every write survives a crash (AOF, fsync always), each
 * with its own file in `directory`: a restart brings their keys and epoch hash back from disk.
 */
export const appendOnly =
  (directory: string) =>
  (port: number): string[] => [
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--dir',
    directory,
    '--appendfilename',
    `aof-${port}.aof`,
    '--appenddirname',
    `aof-${port}`,
  ];
