/**
 * Bound script copies: the acquire and fence scripts without the INFO server they would read on
 * every call (about 4 µs of their ~19 µs on the server), for a member that is one Redis ≥ 7
 * process. A bound copy carries the run id of the process it was loaded into
 * (src/lua/_epoch.lua, BOUND_RUN_ID) in place of reading it.
 *
 * The safety argument. The run id tells the epoch script which process it runs in, and that is
 * what keeps a command ioredis re-sent to a new process after a reconnect, or a delayed one,
 * from acting there as if in the epoch it was meant for (docs/internals.md#re-send-after-reconnect). A bound copy may state it
 * only if it can run nowhere else. It cannot:
 * - a script cache belongs to one process: it starts empty, is not persisted (RDB, AOF), and
 *   since Redis 7 is not replicated (scripts replicate as their effects; SCRIPT LOAD is not
 *   propagated). So a copy is in the caches it was loaded into, and nowhere else;
 * - each copy is loaded once: it carries a fresh random nonce, so no two loads make the same
 *   text, and it is loaded by MULTI { SCRIPT LOAD; INFO server } EXEC on a connection of our own
 *   that never re-sends and queues nothing offline: the INFO in the same transaction ran in the
 *   same process as the load, and names it. A copy is used only when that name is the one the
 *   copy carries; on any other answer this member stops binding for good (its loaded copy is
 *   then never called, so it is harmless where it landed);
 * - a copy is only ever called by EVALSHA (never EVAL with its text, which would load it
 *   wherever the call lands), so a call that reaches any other process, re-sent or retargeted,
 *   fails with NOSCRIPT and is never counted; after a NOSCRIPT the member stops using that copy
 *   and binds afresh, with a new nonce;
 * - a copy is called only while the process the client's own connection reaches, as its server
 *   watch's last INFO says (watch.ts, runId: undefined from a lost connection until the next
 *   reading, as the connection may have come back to another process), is the one it was loaded
 *   into: the member compares the two on every call it makes (RedisMember, #boundCopies; a call
 *   in a batch, batching.ts, is written at the end of that tick, as a corked call was). Both are fields,
 *   set where what they follow changes (here: a load, a NOSCRIPT, a new process; watch.ts: each
 *   reading and each lost connection), so the comparison is exact at any call, whatever order
 *   the watch's listeners run in.
 * Where any of this cannot be known (Redis < 7 and KeyDB, where SCRIPT LOAD is propagated: checked
 * on the process the loader reached too; Dragonfly, which has no run id; a Cluster, whose calls spread
 * over nodes; a client whose adapter cannot make such a loader (clients/connection.ts: only the
 * ioredis one, and not with a reconnectOnError, which may re-send a call that met NOSCRIPT
 * forever); no permission for SCRIPT LOAD or MULTI), the generic scripts
 * read INFO server, as before.
 *
 * What it costs the server: a copy of each bindable script (scripts.ts, BINDABLE: the batch of
 * acquires and releases, batching.ts, is the largest, ~20 KB) per bound client, in each member's
 * script cache until that server restarts or SCRIPT FLUSH (a script
 * loaded by SCRIPT LOAD is never evicted). One binding serves every Redlock on a client; a copy is
 * loaded only where the loader reached the very process the client's own connection reports.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Connection, Loader } from '../clients/index.js';
import type { Logger } from '../diagnostics.js';
import { BINDABLE, boundLua, type Bindable } from '../store/scripts.js';
import { hasRunId, keepsScriptsLocal, serverFacts, type ServerFacts } from '../store/server.js';
import type { ServerWatch } from './watch.js';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

/**
 * A process that names itself (a run id: not Dragonfly) and keeps loaded scripts to itself
 * (Redis ≥ 7, any Valkey: store/server.ts, keepsScriptsLocal). Each is read from INFO as the
 * feature it is, not from `redis_version` alone (Valkey pins it at 7.2.4, KeyDB says 6.3).
 */
export function canBind(facts: ServerFacts): boolean {
  return hasRunId(facts) && keepsScriptsLocal(facts);
}

/** The most a load may take: a server that accepts the connection and never answers must not hold it (or the process) longer. */
const LOAD_TIMEOUT_MS = 2_000;

/** One binding per client, however many Redlocks share it (as the server watch: watch.ts). */
const bindings = new WeakMap<object, ScriptBinding>();

/** What a binding needs of its member: the client, its server watch, its name, a logger; `usable`: its topology allows binding. */
export interface BindingOf {
  client: Connection;
  server: ServerWatch;
  member: string;
  logger: Logger;
  usable: boolean;
}

export function bindingOf(of: BindingOf): ScriptBinding {
  let binding = bindings.get(of.client);
  if (!binding) bindings.set(of.client, (binding = new ScriptBinding(of)));
  return binding;
}

/** Verified bound copies: the process they were loaded into (its run id), and each script's SHA there. */
export interface BoundCopies {
  readonly runId: string;
  readonly shas: Readonly<Record<Bindable, string>>;
}

export class ScriptBinding {
  readonly #client: Connection;
  /** What the client's own connection says of its server (watch.ts): a copy is used only for that process. */
  readonly #server: ServerWatch;
  readonly #member: string;
  readonly #logger: Logger;
  /**
   * The verified copies, and the process they are in; undefined while there are none. Written
   * only here; members read it on every call, with their watch's runId (the header says how).
   */
  current: BoundCopies | undefined;
  #off: boolean;
  #loading = false;

  constructor({ client, server, member, logger, usable }: BindingOf) {
    this.#client = client;
    this.#server = server;
    this.#member = member;
    this.#logger = logger;
    // Only an adapter that can make a loader and call a copy on the ordered path (the ioredis one).
    this.#off = !usable || client.loader === undefined || client.evalsha === undefined;
    server.listeners.add(() => this.#follow());
    this.#follow();
  }

  /** After every reading of the member's INFO: bind to the process it names, once per process. */
  #follow(): void {
    const facts = this.#server.stale ? undefined : this.#server.facts;
    if (this.#off || facts === undefined || !canBind(facts) || this.current?.runId === facts.runId) return;
    this.current = undefined;
    this.#load();
  }

  /** A call by `sha` met NOSCRIPT: that copy is not where the call went. Stop using it; bind afresh. */
  missing(sha: string): void {
    if (this.current === undefined || !Object.values(this.current.shas).includes(sha)) return;
    this.current = undefined;
    this.#load();
  }

  #load(): void {
    if (this.#loading || this.#off) return;
    this.#loading = true;
    // Our own connection: it never re-sends a command after a reconnect, queues nothing while
    // disconnected, does not reconnect at all, and closes with the user's client.
    const loader = this.#client.loader!();
    // Never longer than LOAD_TIMEOUT_MS: a loader must not keep the process alive.
    const deadline = setTimeout(() => loader.close(), LOAD_TIMEOUT_MS);
    deadline.unref();
    this.#bindOn(loader)
      .catch((error: Error & { previousErrors?: Error[] }) => {
        // An ACL refusal inside MULTI surfaces as EXECABORT, with the NOPERM among previousErrors.
        const said = [error.message, ...(error.previousErrors ?? []).map((previous) => previous.message)].join(' ');
        if (/NOPERM/.test(said)) {
          // A user without SCRIPT LOAD, MULTI or EXEC (README, ACL): it never will have them.
          this.#off = true;
          this.#logger.warn(
            { member: this.#member, error: error.message },
            'no permission to load bound scripts (+script|load +multi +exec): the generic scripts read INFO server on every call',
          );
          return;
        }
        // A connection that failed or timed out: the generic scripts go on working. Try again
        // at the next reading of the member's INFO.
        this.#logger.debug({ member: this.#member, error: error.message }, 'could not load bound scripts; using the generic ones');
      })
      .finally(() => {
        this.#loading = false;
        clearTimeout(deadline);
        loader.close();
      });
  }

  async #bindOn(loader: Loader): Promise<void> {
    await loader.connect();
    const facts = serverFacts(await loader.info('server'));
    const { runId } = facts;
    // Only into the process the client's own connection reports, and only one that keeps loaded
    // scripts to itself (Redis ≥ 7): the loader may have reached another (a failover behind one
    // address, a proxy), and loading there would leave a copy nobody can call.
    if (!canBind(facts) || runId !== this.#server.runId) return;
    const nonce = randomBytes(8).toString('hex');
    const names = Object.keys(BINDABLE) as Bindable[];
    const texts = names.map((name) => boundLua(BINDABLE[name], runId, nonce));
    const loaded = await loader.loadAll(texts);
    const ranIn = serverFacts(loaded.info).runId;
    const shas = texts.map(sha1);
    if (ranIn !== runId || shas.some((sha, index) => loaded.shas[index] !== sha)) {
      // The transaction ran in another process than the INFO before it named (a restart, or a
      // proxy that switched servers, in between). Its copies are never called; stop binding.
      this.#off = true;
      this.#logger.warn(
        { member: this.#member, expected: runId, ranIn },
        'bound scripts landed in another server process; this member uses the generic scripts from now on',
      );
      return;
    }
    this.current = { runId, shas: Object.fromEntries(names.map((name, index) => [name, shas[index]!])) as Record<Bindable, string> };
  }
}
