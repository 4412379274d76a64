/**
 * The masters a test runs against: N independent redis-server instances on 127.0.0.1,
 * each of which a fault test can kill, pause and restart. Two backends implement this:
 * local processes (default) and testcontainers (QUORUMLOCK_TEST_BACKEND=testcontainers).
 */
export interface Master {
  readonly host: string;
  /** Stays the same across restart(), so clients reconnect to the same address. */
  readonly port: number;
  /** SIGKILL: the server dies at once, losing everything it held (no persistence). */
  kill(): Promise<void>;
  /** SIGSTOP: the server stops answering but keeps its sockets open. */
  pause(): Promise<void>;
  /** SIGCONT after pause(). */
  resume(): Promise<void>;
  /** Start again on the same port, empty. Kills first if still running. */
  restart(): Promise<void>;
  /** Stop for good (SIGKILL, resuming first if paused). */
  stop(): Promise<void>;
  readonly running: boolean;
  readonly paused: boolean;
}

export interface StartOptions {
  /**
   * Extra redis-server arguments, e.g. ['--maxmemory', '10mb'], or a function of the master's port
   * (e.g. TLS only: (port) => ['--port', '0', '--tls-port', String(port), ...]).
   */
  args?: string[] | ((port: number) => string[]);
  /** Environment for the server process (e.g. LD_PRELOAD for libfaketime). Process backend only. */
  env?: Record<string, string>;
}

export interface MasterSet {
  readonly masters: Master[];
  stop(): Promise<void>;
}

export interface Backend {
  readonly name: 'process' | 'testcontainers';
  start(count: number, options?: StartOptions): Promise<MasterSet>;
}
