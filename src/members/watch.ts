/**
 * The watch on what a member's server says about itself (INFO): its role, its run id, whether it
 * may evict. Read once per connection and every SERVER_REFRESH_MS, never per call: no round trip
 * is added to any lock operation. What the member asks on every call (does it count, which
 * server is it, which process does the connection reach) is worked out here once per reading,
 * and read as fields.
 */
import type { Connection } from '../clients/index.js';
import { setBackgroundTimer, systemClock } from '../clock/index.js';
import type { Logger } from '../diagnostics.js';
import { serverIdentity, whyNotCounting, type ServerFacts } from '../store/server.js';
import type { Hearing } from './hearing.js';

/** What the server said about itself at its last (re)connect or refresh; undefined until then. */
export interface ServerWatch {
  facts: ServerFacts | undefined;
  /** Why the server must not count, by `facts` (whyNotCounting); undefined when it may, or before a reading. */
  why: string | undefined;
  /** What names the server for the duplicate check, by `facts` (serverIdentity); undefined before a reading. */
  identity: string | undefined;
  /** The connection was lost since `facts` were read: they may be another process's now. */
  stale: boolean;
  /**
   * The run id of the process the client's own connection reaches, as its last reading said;
   * undefined before one, and after a lost connection until the next (it may have come back to
   * another process: until INFO names it, nothing may assume which one).
   */
  runId: string | undefined;
  /**
   * How many times the client's connection became ready: a reply to a call made before the last
   * change may come from another server process (ioredis re-sends unanswered calls after a reconnect).
   */
  connections: number;
  /** Settles once the first reading succeeded or failed. */
  readonly firstReading: Promise<void>;
  /** Called after every reading, and when the connection is lost (the Redlock checks for duplicate members). */
  readonly listeners: Set<() => void>;
}

/** One watch per connection (one per client), however many Redlocks share it: one INFO per connect and per refresh. */
const watches = new WeakMap<object, ServerWatch>();

/**
 * How often a connected member's INFO is read again: a CONFIG SET of maxmemory-policy, or a
 * REPLICAOF, changes a server without a reconnect. Between readings the scripts still refuse a
 * server that is not a master (acquire.lua), and a failover or resync starts a new epoch there.
 */
const SERVER_REFRESH_MS = 10_000;

/** How soon a first reading that failed is tried again. */
const FAILED_READING_RETRY_MS = 500;

/** Calls `watch`'s listeners. */
function tell(watch: ServerWatch): void {
  for (const listener of watch.listeners) listener();
}

/** A reading's facts, and what follows from them, set on `watch`; its listeners told. */
function record(watch: ServerWatch, facts: ServerFacts, member: string, logger: Logger): void {
  const why = whyNotCounting(facts);
  if (why !== undefined && why !== watch.why) logger.warn({ member, why }, 'member will not count toward quorum');
  watch.facts = facts;
  watch.why = why;
  watch.identity = serverIdentity(facts);
  watch.stale = false;
  watch.runId = facts.runId;
  tell(watch);
}

/**
 * INFO at connect, at every reconnect and every SERVER_REFRESH_MS: the role, the run id (which
 * identifies a server however it is addressed, for the duplicate check) and the eviction policy.
 * `readFacts` reads them (serverTopology in members/redis-member.ts, members/cluster.ts); undefined when the client
 * cannot (then it is taken as a plain master). Each answer is a sign of life for `hearing`, if given.
 */
export function watchServer(
  client: Connection,
  logger: Logger,
  readFacts: (() => Promise<ServerFacts>) | undefined,
  hearing?: Hearing | undefined,
): ServerWatch {
  const known = watches.get(client);
  if (known) return known;
  let settleFirst!: () => void;
  const watch: ServerWatch = {
    facts: undefined,
    why: undefined,
    identity: undefined,
    stale: false,
    runId: undefined,
    connections: client.state === 'ready' ? 1 : 0,
    firstReading: new Promise<void>((resolve) => (settleFirst = resolve)),
    listeners: new Set(),
  };
  watches.set(client, watch);
  if (readFacts === undefined) {
    settleFirst();
    return watch;
  }
  const read = () => {
    if (client.state !== 'ready') return;
    readFacts()
      .then(
        (facts) => {
          // An answer on the connection our calls are written on: a sign of life (hearing.ts).
          hearing?.heard();
          record(watch, facts, client.id, logger);
        },
        (error: Error) => {
          logger.warn({ member: client.id, error: error.message }, 'could not read the member INFO (ACL: allow +info)');
          // Never read: no yes counts, as nothing says which server it is (quorum/round.ts counts
          // a server once by its identity). Read again soon, not at the next refresh.
          if (watch.facts !== undefined) return;
          watch.why = `its server is not identified yet (INFO failed: ${error.message})`;
          setBackgroundTimer(systemClock, read, FAILED_READING_RETRY_MS);
        },
      )
      .finally(settleFirst);
  };
  read();
  client.on('ready', () => {
    watch.connections++;
    read();
  });
  client.on('close', () => {
    watch.stale = true;
    watch.runId = undefined;
    tell(watch);
  });
  // In the background: the watch must never keep the process alive.
  const refresh = setInterval(read, SERVER_REFRESH_MS);
  refresh.unref();
  client.on('end', () => clearInterval(refresh));
  return watch;
}
