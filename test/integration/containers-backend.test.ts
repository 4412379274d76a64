/**
 * The testcontainers backend of the harness does what fault tests rely on: independent masters,
 * kill loses data, restart comes back empty on the same port, pause stops answers, resume brings them back.
 * Runs only when that backend is selected (it needs a Docker-API engine; see scripts/podman-setup.sh).
 */
import Redis from 'ioredis';
import { connect } from 'node:net';
import { getContainerRuntimeClient } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Master, MasterSet } from '../harness/types.js';
import { eventually } from './util.js';

function client(master: Master): Redis {
  return new Redis({
    host: master.host,
    port: master.port,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false, // fail at once while disconnected instead of queueing
    commandTimeout: 300, // a paused master never answers
    connectTimeout: 1000,
    retryStrategy: () => 50, // keep reconnecting quickly, so the client finds a restarted master
  });
}

/** A raw TCP connect: 'connected', or the error code (ECONNREFUSED once the server is gone). */
function tcpConnect(master: Master): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(master.port, master.host);
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

async function timed<T>(label: string, action: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await action();
  console.log(`[containers backend] ${label}: ${Math.round(performance.now() - start)} ms`);
  return result;
}

describe('testcontainers backend', () => {
  let set: MasterSet;
  let clients: Redis[] = [];

  beforeAll(async () => {
    const { backendFromEnvironment } = await import('../harness/index.js');
    const backend = await backendFromEnvironment();
    expect(backend.name).toBe('testcontainers');
    set = await timed('start 3 masters', () => backend.start(3));
    clients = set.masters.map(client);
    for (const c of clients) c.on('error', () => {}); // reconnect noise while a master is down
    await Promise.all(clients.map((c) => c.connect()));
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await set?.stop();
  }, 60_000);

  it('starts independent masters on distinct loopback ports', async () => {
    const ports = set.masters.map((m) => m.port);
    expect(new Set(ports).size).toBe(3);
    for (const [i, c] of clients.entries()) {
      expect(set.masters[i]!.running).toBe(true);
      expect(await c.set('k', `v${i}`)).toBe('OK');
    }
    expect(await Promise.all(clients.map((c) => c.get('k')))).toEqual(['v0', 'v1', 'v2']);
  });

  it('kill() makes the master unreachable, restart() brings it back empty on the same port', async () => {
    const master = set.masters[0]!;
    const c = clients[0]!;
    const port = master.port;

    await timed('kill', () => master.kill());
    expect(master.running).toBe(false);
    await expect(c.get('k')).rejects.toThrow();
    expect(await tcpConnect(master)).toBe('ECONNREFUSED');
    // the others are untouched
    expect(await clients[1]!.get('k')).toBe('v1');

    await timed('restart (after kill)', () => master.restart());
    expect(master.running).toBe(true);
    expect(master.port).toBe(port);
    await timed('client reconnect after restart', () => eventually(() => c.ping()));
    expect(await c.get('k')).toBeNull();

    // restart() of a running master also works (it kills first)
    await c.set('k', 'again');
    await timed('restart (while running)', () => master.restart());
    await eventually(() => c.ping());
    expect(await c.get('k')).toBeNull();
  }, 60_000);

  it('pause() stops answers with the socket open, resume() brings them back', async () => {
    const master = set.masters[1]!;
    const c = clients[1]!;

    await timed('pause', () => master.pause());
    expect(master.paused).toBe(true);
    const started = performance.now();
    await expect(c.ping()).rejects.toThrow(/timed out/i); // commandTimeout 300 ms
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);

    await timed('resume', () => master.resume());
    expect(master.paused).toBe(false);
    expect(await c.ping()).toBe('PONG');
    expect(await c.get('k')).toBe('v1'); // a pause loses nothing
  }, 30_000);

  it('kill() of a paused master kills it', async () => {
    const master = set.masters[2]!;
    await master.pause();
    await timed('kill (while paused)', () => master.kill());
    expect(master.paused).toBe(false);
    expect(await tcpConnect(master)).toBe('ECONNREFUSED');
    await master.restart();
    expect(await tcpConnect(master)).toBe('connected');
    expect(await eventually(() => clients[2]!.ping())).toBe('PONG');
  }, 60_000);

  it('stop() removes every container', async () => {
    const ports = new Set(set.masters.map((m) => String(m.port)));
    await timed('stop 3 masters', () => set.stop());
    expect(set.masters.every((m) => !m.running)).toBe(true);
    const runtime = await getContainerRuntimeClient();
    const all = await runtime.container.dockerode.listContainers({ all: true }); // exited ones too
    const left = all.filter((info) => ports.has(info.Labels?.['quorumlock.harness'] ?? ''));
    expect(left).toEqual([]);
  }, 60_000);
});
