/**
 * A TCP proxy on 127.0.0.1 in front of one master, for network faults without root or tc netem:
 * added latency per chunk (both directions, order kept) and a blackhole (connections are
 * accepted, nothing is forwarded). Clients connect to `port` instead of the master's.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Bytes were dropped: the RESP stream is broken, the connection must go when the blackhole ends. */
  broken: boolean;
  timers: Set<NodeJS.Timeout>;
}

export class TcpProxy {
  /** Added to every chunk, in each direction. Changing it never reorders chunks. */
  latencyMs = 0;
  #blackhole = false;
  readonly #pairs = new Set<Pair>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static start(target: { host: string; port: number }): Promise<TcpProxy> {
    return new Promise((resolve, reject) => {
      let proxy: TcpProxy;
      const server = createServer((client) => proxy.#accept(client, target));
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        proxy = new TcpProxy(server, (server.address() as { port: number }).port);
        resolve(proxy);
      });
    });
  }

  /**
   * On: drop everything, both ways, on every connection, new ones included. Off: close the
   * connections that lost bytes (as a long partition would have reset them); clients reconnect.
   */
  setBlackhole(on: boolean): void {
    this.#blackhole = on;
    if (!on) for (const pair of this.#pairs) if (pair.broken) this.#drop(pair);
  }

  close(): Promise<void> {
    for (const pair of this.#pairs) this.#drop(pair);
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket, target: { host: string; port: number }): void {
    const pair: Pair = { client, upstream: undefined, broken: this.#blackhole, timers: new Set() };
    this.#pairs.add(pair);
    client.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    if (pair.broken) {
      client.on('data', () => undefined); // accepted, never forwarded
      return;
    }
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => this.#drop(pair)); // e.g. the master is down: the client sees a closed connection
    upstream.on('close', () => this.#drop(pair));
    client.on('data', this.#forwarder(pair, upstream));
    upstream.on('data', this.#forwarder(pair, client));
  }

  /** Delivers chunks to `to` after latencyMs, in arrival order: one queue and one timer per direction. */
  #forwarder(pair: Pair, to: Socket): (chunk: Buffer) => void {
    const queue: { due: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      if (timer) pair.timers.delete(timer);
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.due <= now) to.write(queue.shift()!.chunk);
      if (queue.length > 0) {
        timer = setTimeout(flush, queue[0]!.due - now);
        pair.timers.add(timer);
      }
    };
    return (chunk) => {
      if (this.#blackhole) {
        pair.broken = true;
        return;
      }
      // Never due before the chunk ahead of it, so lowering the latency cannot reorder.
      queue.push({ due: Math.max(performance.now() + this.latencyMs, queue.at(-1)?.due ?? 0), chunk });
      if (!timer) flush();
    };
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    for (const timer of pair.timers) clearTimeout(timer);
    pair.client.destroy();
    pair.upstream?.destroy();
  }
}
