/**
 * Masters as redis-server containers, started through testcontainers against any Docker-API engine
 * (Docker, or rootful podman set up by scripts/podman-setup.sh).
 *
 * Every container uses the host network, so the redis port is a free 127.0.0.1 port of this machine and
 * stays the same across restart() without any port mapping. The image is QUORUMLOCK_REDIS_IMAGE
 * (default quorumlock-redis:local, the registry-free image the setup script builds; `redis:7` works too,
 * its entrypoint passes `--port ...` arguments on to redis-server).
 *
 * There is no Ryuk reaper (it needs a registry pull), so stop() removes the containers. If a test process
 * dies before that, clean up with: podman rm -f $(podman ps -aq --filter label=quorumlock.harness)
 */
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import { onFreePort, startSet } from './common.js';
import type { Backend, Master, MasterSet, StartOptions } from './types.js';

export const REDIS_IMAGE = process.env.QUORUMLOCK_REDIS_IMAGE ?? 'quorumlock-redis:local';

const SETUP_HINT =
  'Could not start a redis container. With rootful podman and no Docker, run first:\n' +
  '  eval "$(bash scripts/podman-setup.sh)"\n' +
  'With Docker, set QUORUMLOCK_REDIS_IMAGE=redis:7 (and TESTCONTAINERS_RYUK_DISABLED=true if Ryuk cannot be pulled).';

function startContainer(port: number, options: StartOptions): Promise<StartedTestContainer> {
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
  return (
    new GenericContainer(REDIS_IMAGE)
      .withNetworkMode('host')
      .withCommand(args)
      .withLabels({ 'quorumlock.harness': String(port) })
      // Log-based readiness: exec-based strategies leak conmon processes under podman 4.3's Docker API,
      // and the scratch image has no shell to exec anyway.
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .withStartupTimeout(30_000)
      .start()
  );
}

/** The raw dockerode handle: testcontainers itself has no kill/pause. */
async function handle(container: StartedTestContainer) {
  return (await getContainerRuntimeClient()).container.getById(container.getId());
}

class ContainerMaster implements Master {
  readonly host = '127.0.0.1';
  #paused = false;

  constructor(
    readonly port: number,
    private container: StartedTestContainer | undefined,
    private readonly options: StartOptions,
  ) {}

  get running(): boolean {
    return this.container !== undefined;
  }

  get paused(): boolean {
    return this.#paused;
  }

  async kill(): Promise<void> {
    const container = this.container;
    if (!container) return;
    this.container = undefined;
    this.#paused = false;
    // An explicit SIGKILL (exit code 137): `stop` would send SIGTERM first on Docker, letting redis shut
    // down cleanly. On a paused container runc sends the signal before thawing, so it never runs again.
    const docker = await handle(container);
    try {
      await docker.kill({ signal: 'SIGKILL' });
    } catch (error) {
      // It had already exited (crashed, or killed from outside): Docker answers 409, podman 500.
      if ((await docker.inspect()).State.Running) throw error;
    }
    await container.stop({ timeout: 0, remove: true }); // already dead: this just removes it
  }

  async pause(): Promise<void> {
    if (!this.container || this.#paused) return;
    await (await handle(this.container)).pause(); // cgroup freezer: sockets stay open, nothing answers
    this.#paused = true;
  }

  async resume(): Promise<void> {
    if (!this.container || !this.#paused) return;
    await (await handle(this.container)).unpause();
    this.#paused = false;
  }

  async restart(): Promise<void> {
    await this.kill();
    // A new container rather than `docker restart`: guaranteed empty, and the same readiness wait as start.
    this.container = await startContainer(this.port, this.options);
  }

  stop(): Promise<void> {
    return this.kill();
  }
}

export const containerBackend: Backend = {
  name: 'testcontainers',
  start(count: number, options: StartOptions = {}): Promise<MasterSet> {
    return startSet(count, async () => {
      try {
        const { port, started } = await onFreePort((port) => startContainer(port, options));
        return new ContainerMaster(port, started, options);
      } catch (error) {
        throw new Error(`${SETUP_HINT}\nLast error: ${String(error)}`, { cause: error });
      }
    });
  },
};
