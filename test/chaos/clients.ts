/**
 * The member clients of every chaos Redlock, made by the library QUORUMLOCK_CHAOS_CLIENT names
 * (ioredis, the default; iovalkey; node-redis, the `redis` package, 6; node-redis5, the `redis5`
 * alias of 5; glide, @valkey/valkey-glide). Read here only: every scenario makes the clients it
 * gives to `new Redlock(...)` through openMembers(). Admin and inspection connections (keys, TIME,
 * CONFIG, REPLICAOF, MONITOR, the fenced store) stay on ioredis.
 *
 * Two profiles:
 * - 'fail-fast': a member that is down or cut off simply does not vote: no offline queue where the
 *   library has one, no re-send of unanswered commands, reconnect at once (every 20 ms). A holder's
 *   SET queued or re-sent to a healed or restarted member would land late and hide the restart
 *   hazard the scenarios make happen.
 * - 'defaults': what users run with (the combined scenario): each library's own defaults.
 */
import { GlideClient } from '@valkey/valkey-glide';
import Redis from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis5';
import type { MemberClient } from '../../src/index.js';

export const CHAOS_LIBRARIES = ['ioredis', 'iovalkey', 'node-redis', 'node-redis5', 'glide'] as const;
export type ChaosLibrary = (typeof CHAOS_LIBRARIES)[number];

function chosen(): ChaosLibrary {
  const named = process.env.QUORUMLOCK_CHAOS_CLIENT ?? 'ioredis';
  if (!(CHAOS_LIBRARIES as readonly string[]).includes(named)) {
    throw new Error(`QUORUMLOCK_CHAOS_CLIENT must be one of ${CHAOS_LIBRARIES.join(', ')}; got ${named}`);
  }
  return named as ChaosLibrary;
}

/** The library every chaos Redlock's members use in this run. */
export const chaosLibrary: ChaosLibrary = chosen();

export type Profile = 'fail-fast' | 'defaults';

export interface Address {
  host: string;
  port: number;
}

/** One Redlock's member clients, one per address, and what the scenarios need of them. */
export interface Members {
  readonly clients: MemberClient[];
  /** Settles once every client has connected, or failed to at first (never rejects). */
  readonly connected: Promise<void>;
  /** Commands (or, for GLIDE, requests) sent to member `index` and not answered yet. */
  inFlight(index: number): number;
  /** Closes every client at once, without waiting for replies (a crash, as far as the servers see). */
  close(): void;
}

/** ioredis' settings for 'fail-fast' (iovalkey takes the same). */
export const ioredisFailFast = { lazyConnect: true, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, retryStrategy: () => 20 } as const;

/** How long a node-redis or GLIDE connect may take: far above nodeTimeout (50 ms), well below a ttl. */
const CONNECT_TIMEOUT_MS = 500;
/**
 * GLIDE's request timeout: above nodeTimeout (50 ms), and short. GLIDE has no switch for an
 * offline queue, and the adapter keeps one Batch in flight per member (src/clients/glide.ts, Pipe):
 * a Batch written into a cut link holds the member's later calls back until it times out, and they
 * go out together after that, late; at a heal, up to this long after they were made. With 500 ms
 * those late acquires and their line entries landed on the healed members at every heal, and the
 * kill-restart controls (quarantine off) no longer reached the restart hazard they must show.
 */
const GLIDE_REQUEST_TIMEOUT_MS = 100;

interface Opened {
  client: MemberClient;
  connected: Promise<unknown>;
  inFlight(): number;
  close(): void;
}

/**
 * Clients to `addresses` of the chosen library. `wait`: resolve only once they are connected
 * (else the caller may await `connected` itself: a member cut off at that moment never answers
 * the handshake, and simply does not vote until it connects).
 */
export function openMembers(addresses: readonly Address[], profile: Profile, options: { wait?: boolean } = {}): Promise<Members> {
  return openMembersOf(chaosLibrary, addresses, profile, options);
}

/** openMembers() of a library named here, whatever the run chose (the integration tests go through each). */
export async function openMembersOf(
  library: ChaosLibrary,
  addresses: readonly Address[],
  profile: Profile,
  options: { wait?: boolean } = {},
): Promise<Members> {
  const wait = options.wait ?? true;
  const opened = await Promise.all(addresses.map((address) => open(library, address, profile, wait)));
  const connected = Promise.all(opened.map((one) => one.connected.catch(() => undefined))).then(() => undefined);
  if (wait) await connected;
  let closed = false;
  return {
    clients: opened.map((one) => one.client),
    connected,
    inFlight: (index) => opened[index]!.inFlight(),
    close() {
      if (closed) return;
      closed = true;
      for (const one of opened) one.close();
    },
  };
}

async function open(library: ChaosLibrary, address: Address, profile: Profile, wait: boolean): Promise<Opened> {
  switch (library) {
    case 'ioredis':
    case 'iovalkey':
      return openIoredis(library, address, profile);
    case 'node-redis':
    case 'node-redis5':
      return openNodeRedis(library, address, profile);
    case 'glide':
      return openGlide(address, profile, wait);
  }
}

function openIoredis(library: 'ioredis' | 'iovalkey', address: Address, profile: Profile): Opened {
  const options = { ...address, ...(profile === 'fail-fast' ? ioredisFailFast : {}) };
  // The two classes are alike, but their types are not compatible: one branch each.
  const client: Redis | Valkey = library === 'ioredis' ? new Redis(options) : new Valkey(options);
  client.on('error', () => {}); // restarts and cuts are the point here
  const connected = profile === 'fail-fast' ? client.connect() : client.ping();
  // Written and unanswered: what ioredis re-sends after a reconnect (with its defaults).
  return { client, connected, inFlight: () => client.commandQueue.length, close: () => client.disconnect() };
}

/** Counts the calls of `method` on `target` that have not settled yet (the adapter calls it on the instance). */
function countPending(target: object, method: string): () => number {
  let pending = 0;
  const object = target as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = object[method]!.bind(target);
  object[method] = (...args: unknown[]) => {
    pending++;
    const settled = () => void pending--;
    const result = original(...args);
    result.then(settled, settled);
    return result;
  };
  return () => pending;
}

function openNodeRedis(library: 'node-redis' | 'node-redis5', address: Address, profile: Profile): Opened {
  const failFast = profile === 'fail-fast';
  const options = {
    socket: { ...address, ...(failFast ? { reconnectStrategy: () => 20, connectTimeout: CONNECT_TIMEOUT_MS } : {}) },
    ...(failFast ? { disableOfflineQueue: true } : {}),
  };
  // 6 and 5 take the same options; their generic types are not compatible: one branch each.
  const client: { on(event: 'error', listener: () => void): unknown; connect(): Promise<unknown>; destroy(): void } =
    library === 'node-redis' ? createClient6(options) : createClient5(options);
  client.on('error', () => {}); // node-redis crashes the process on an 'error' nobody listens to
  const inFlight = countPending(client, 'sendCommand');
  const connected = client.connect();
  return {
    client: client as unknown as MemberClient,
    connected,
    inFlight,
    close() {
      try {
        client.destroy(); // 5 throws on a client that is not open
      } catch {
        // already closed
      }
    },
  };
}

async function openGlide(address: Address, profile: Profile, wait: boolean): Promise<Opened> {
  const client = await GlideClient.createClient({
    addresses: [address],
    // Not connected before the first request when the caller does not wait: a cut-off member's
    // handshake never ends, and createClient would wait for it.
    lazyConnect: !wait,
    ...(profile === 'fail-fast'
      ? {
          requestTimeout: GLIDE_REQUEST_TIMEOUT_MS,
          connectionBackoff: { numberOfRetries: 2, factor: 10, exponentBase: 2, jitterPercent: 20 },
          advancedConfiguration: { connectionTimeout: CONNECT_TIMEOUT_MS },
        }
      : {}),
  });
  const requests = countPending(client, 'exec');
  const commands = countPending(client, 'customCommand');
  return {
    client,
    connected: wait ? Promise.resolve() : client.customCommand(['PING']),
    inFlight: () => requests() + commands(),
    close: () => client.close(),
  };
}
