/**
 * A client's connection to one simulated member, shaped like the ioredis client that
 * `new Redlock([...])` accepts: `options` (host, port, db: how memberId names it), `status`,
 * `on`/`once`, `role()`, and `defineCommand`, which installs the script commands src/members/redis-member.ts
 * calls (quorumlockAcquire(keyCount, ...keys, ...args) and the rest, under commandNames). Each
 * runs the script's real text on the member (sim-member.ts: EVALSHA, EVAL when not cached). It
 * has no `info()`: the member is taken as a plain master, with no server watch polling it.
 *
 * Each command is one request and one reply over a simulated network: each is delivered after a
 * delay drawn from `delayMs()`, as a timer on the shared ManualClock. Like a TCP connection it is
 * FIFO in each direction: nothing overtakes what was sent before it on the same connection (the
 * rollback argument in src/quorum/release.ts relies on exactly that).
 */
import type { ManualClock } from '../../src/index.js';
import { commandNames } from '../../src/clients/ioredis.js';
import { sha1 } from '../../test/model/lua-vm.js';
import type { SimMember } from './sim-member.js';

/** One command as the member ran it (for debugging a cell; see runCell's `trace`). */
export interface TraceEvent {
  at: number;
  client: number;
  port: number;
  command: string;
  /** The lock value for acquire, release and extend (ARGV[2]: ARGV[1] is the epoch the call is bound to); undefined for the epoch read. */
  value: string | undefined;
  reply: unknown;
}

export class SimConnection {
  readonly options: { host: string; port: number; db: number };
  readonly status = 'ready';
  /** Latest arrival time scheduled on this connection, per direction. */
  #lastRequestAt = -Infinity;
  #lastReplyAt = -Infinity;
  readonly #clock: ManualClock;
  [command: string]: unknown;

  constructor(
    readonly member: SimMember,
    readonly delayMs: () => number,
    readonly client = 0,
    readonly trace?: (event: TraceEvent) => void,
  ) {
    this.#clock = member.clock;
    this.options = { host: member.spec.host, port: member.spec.port, db: 0 };
  }

  defineCommand(command: string, { lua }: { lua: string }): void {
    // The command is the script's name with a digest of its text (src/store/scripts.ts, commandNames).
    const name = Object.entries(commandNames).find(([, defined]) => defined === command)?.[0] ?? command;
    const script = { lua, sha: sha1(lua) };
    // ioredis flattens a command's arguments one level: keys and arguments come as two arrays.
    this[command] = (keyCount: number | string, ...rest: (string | number | readonly string[])[]) => {
      const words = rest.flat().map(String);
      return this.#send(name, script, words.slice(0, Number(keyCount)), words.slice(Number(keyCount)));
    };
  }

  on(_event: string, _listener: (...args: unknown[]) => void): this {
    return this;
  }

  once(_event: string, _listener: (...args: unknown[]) => void): this {
    return this;
  }

  role(): Promise<unknown[]> {
    return Promise.resolve(['master', 0, []]);
  }

  duplicate(): never {
    throw new Error('sim: subscriber connections are not simulated (tryAcquire never waits in line)');
  }

  #send(name: string, script: { lua: string; sha: string }, keys: string[], args: string[]): Promise<unknown> {
    const clock = this.#clock;
    return new Promise((resolve, reject) => {
      this.#lastRequestAt = Math.max(clock.now() + this.delayMs(), this.#lastRequestAt);
      clock.setTimer(
        () =>
          this.member.execute(() => {
            let reply: unknown;
            let failure: unknown;
            let failed = false;
            try {
              reply = this.member.run(script, keys, args);
            } catch (error) {
              failed = true;
              failure = error;
            }
            const value = name === 'quorumlockEpoch' ? undefined : args[1];
            this.trace?.({ at: clock.now(), client: this.client, port: this.options.port, command: name, value, reply: failed ? failure : reply });
            this.#lastReplyAt = Math.max(clock.now() + this.delayMs(), this.#lastReplyAt);
            clock.setTimer(() => (failed ? reject(failure) : resolve(reply)), this.#lastReplyAt - clock.now());
          }),
        this.#lastRequestAt - clock.now(),
      );
    });
  }
}
