/**
 * Masters as redis-server child processes on free 127.0.0.1 ports, without persistence.
 *
 * They are spawned as plain (non-detached) children: PID 1 on CI machines does not reap orphans,
 * so a daemonized server would linger as a zombie. Every child still running when this process
 * exits is SIGKILLed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { onFreePort, startSet } from './common.js';
import type { Backend, Master, MasterSet, StartOptions } from './types.js';

export { freePort } from './common.js';

/** The binary to run: QUORUMLOCK_REDIS_SERVER, or redis-server from PATH. Read at each start. */
export const redisServerBinary = (): string => process.env.QUORUMLOCK_REDIS_SERVER ?? 'redis-server';

/** No redis-server binary to run: not worth retrying on another port. */
export class MissingServerError extends Error {}

/**
 * Why redis-server cannot run here, with what to do about it; undefined when it can. Names the
 * binary tried: QUORUMLOCK_REDIS_SERVER when set, else redis-server from PATH.
 */
export function missingRedisServer(): string | undefined {
  const binary = redisServerBinary();
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (!probe.error && probe.status === 0) return undefined;
  const tried =
    process.env.QUORUMLOCK_REDIS_SERVER === undefined
      ? 'redis-server was not found on PATH'
      : `QUORUMLOCK_REDIS_SERVER=${binary} could not be run (${probe.error?.message ?? `exit ${probe.status}`})`;
  return (
    `${tried}. These tests start their own redis-server processes; install it with one of:\n` +
    '  Debian/Ubuntu:  sudo apt-get install -y redis-server faketime openssl lua5.4\n' +
    '  macOS:          brew install redis\n' +
    'or set QUORUMLOCK_REDIS_SERVER to the path of a redis-server binary.\n' +
    'Without one: npx vitest run --project unit (the tests that need no server), or, with a container\n' +
    'engine, QUORUMLOCK_REDIS_IMAGE=redis:7 npm run test:containers (the lock tests in containers).'
  );
}

/** Children SIGKILLed when this process exits (spawnUntilReady adds them). */
const live = new Set<ChildProcess>();
const killAll = () => {
  for (const child of live) child.kill('SIGKILL');
};
process.once('exit', killAll);
// 'exit' does not run when a signal ends the process: kill the servers, then die of the same
// signal as we would have without this handler.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    process.kill(process.pid, signal);
  });
}

function spawnServer(port: number, options: StartOptions): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
    ...(typeof options.args === 'function' ? options.args(port) : (options.args ?? [])),
  ];
  return spawnUntilReady(args, 'Ready to accept connections', `redis-server on port ${port}`, { env: { ...process.env, ...options.env } });
}

/**
 * Spawns redis-server with `args` and resolves once its output shows `readyLine`; from then on it
 * is SIGKILLed with the others if this process exits. `what` names it in errors.
 */
export function spawnUntilReady(
  args: string[],
  readyLine: string,
  what: string,
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(redisServerBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    let ready = false;
    const onData = (chunk: Buffer) => {
      if (ready) return;
      output += chunk.toString();
      if (output.includes(readyLine)) {
        ready = true;
        live.add(child);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'ENOENT' ? new MissingServerError(missingRedisServer() ?? error.message) : error);
    });
    child.once('exit', (code, signal) => {
      live.delete(child);
      if (!ready) reject(new Error(`${what} exited before it was ready (code ${code}, signal ${signal}):\n${output}`));
    });
  });
}

export function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

class ProcessMaster implements Master {
  readonly host = '127.0.0.1';
  #paused = false;

  constructor(
    readonly port: number,
    private child: ChildProcess | undefined,
    private readonly options: StartOptions,
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    this.#paused = false;
    child.kill('SIGKILL'); // works on a stopped process too
    await waitForExit(child);
  }

  async pause(): Promise<void> {
    if (!this.child || this.#paused) return;
    this.child.kill('SIGSTOP');
    this.#paused = true;
  }

  async resume(): Promise<void> {
    if (!this.child || !this.#paused) return;
    this.child.kill('SIGCONT');
    this.#paused = false;
  }

  async restart(): Promise<void> {
    await this.kill();
    this.child = await spawnServer(this.port, this.options);
  }

  stop(): Promise<void> {
    return this.kill();
  }
}

export const processBackend: Backend = {
  name: 'process',
  start(count: number, options: StartOptions = {}): Promise<MasterSet> {
    return startSet(count, async () => {
      const { port, started } = await onFreePort(
        (port) => spawnServer(port, options),
        (error) => error instanceof MissingServerError,
      );
      return new ProcessMaster(port, started, options);
    });
  },
};
