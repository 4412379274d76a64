/**
 * A TCP proxy on 127.0.0.1 in front of one master, for network faults without root or tc netem:
 * added latency per chunk (both directions, order kept), a blackhole (connections are accepted,
 * nothing is forwarded), a hold (one direction is buffered, then delivered in order: a delayed
 * link, not a cut one) and a retarget (the same address now reaches another server, as after a
 * failover behind a fixed address). Clients connect to `port` instead of the master's.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** toServer: what clients send (commands). toClient: what the server sends back (replies). */
export type Direction = 'toServer' | 'toClient';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Bytes were dropped: the RESP stream is broken, the connection must go when the blackhole ends. */
  broken: boolean;
  timers: Set<NodeJS.Timeout>;
  /** Directions held on this connection only (holdNewConnections). */
  held: Set<Direction>;
  /** Delivers what is due in each direction (what a hold kept back, once it is released). */
  flush: Partial<Record<Direction, () => void>>;
}

export class TcpProxy {
  /** Added to every chunk, in each direction. Changing it never reorders chunks. */
  latencyMs = 0;
  #blackhole = false;
  readonly #held = new Set<Direction>();
  readonly #heldNew = new Set<Direction>();
  readonly #pairs = new Set<Pair>();
  #target: { host: string; port: number };

  private constructor(
    private readonly server: Server,
    readonly port: number,
    target: { host: string; port: number },
  ) {
    this.#target = target;
  }

  static start(target: { host: string; port: number }): Promise<TcpProxy> {
    return new Promise((resolve, reject) => {
      let proxy: TcpProxy;
      const server = createServer((client) => proxy.#accept(client));
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        proxy = new TcpProxy(server, (server.address() as { port: number }).port, { host: target.host, port: target.port });
        resolve(proxy);
      });
    });
  }

  /** Where new connections go. */
  get target(): { host: string; port: number } {
    return this.#target;
  }

  /**
   * On: drop everything, both ways, on every connection, new ones included. Off: close the
   * connections that lost bytes (as a long partition would have reset them); clients reconnect.
   */
  setBlackhole(on: boolean): void {
    this.#blackhole = on;
    if (!on) for (const pair of this.#pairs) if (pair.broken) this.#drop(pair);
  }

  /**
   * Buffers everything sent in `direction`, on every connection (new ones included), until
   * release(): nothing is lost and nothing is reordered, it only arrives late. The connections
   * stay open, so neither side sees anything but silence.
   */
  hold(direction: Direction): void {
    this.#held.add(direction);
  }

  /** Delivers what hold() kept back, in the order it was sent, and forwards as before. */
  release(direction: Direction): void {
    if (!this.#held.delete(direction)) return;
    for (const pair of this.#pairs) pair.flush[direction]?.();
  }

  /**
   * Like hold(), but only on connections accepted from now on, until releaseNewConnections():
   * open connections go on as before, a new one (a client's duplicate, say) gets nowhere.
   */
  holdNewConnections(direction: Direction): void {
    this.#heldNew.add(direction);
  }

  /** Delivers what holdNewConnections() kept back, in order, and forwards as before. */
  releaseNewConnections(direction: Direction): void {
    this.#heldNew.delete(direction);
    for (const pair of this.#pairs) if (pair.held.delete(direction)) pair.flush[direction]?.();
  }

  isHeld(direction: Direction): boolean {
    return this.#held.has(direction);
  }

  /**
   * New connections go to `target` from now on; open ones are closed (their server is no longer
   * the one behind this address, as after a failover), so clients reconnect, here, to `target`.
   * Anything still held or queued on them is lost with them, as with any closed connection.
   */
  retarget(target: { host: string; port: number }): void {
    this.#target = { host: target.host, port: target.port };
    for (const pair of this.#pairs) this.#drop(pair);
  }

  close(): Promise<void> {
    for (const pair of this.#pairs) this.#drop(pair);
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    const pair: Pair = { client, upstream: undefined, broken: this.#blackhole, timers: new Set(), held: new Set(this.#heldNew), flush: {} };
    this.#pairs.add(pair);
    client.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    if (pair.broken) {
      client.on('data', () => undefined); // accepted, never forwarded
      return;
    }
    const upstream = connect(this.#target.port, this.#target.host);
    pair.upstream = upstream;
    upstream.on('error', () => this.#drop(pair)); // e.g. the master is down: the client sees a closed connection
    upstream.on('close', () => this.#drop(pair));
    client.on('data', this.#forwarder(pair, upstream, 'toServer'));
    upstream.on('data', this.#forwarder(pair, client, 'toClient'));
  }

  /**
   * Delivers chunks to `to` after latencyMs, in arrival order: one queue and one timer per
   * direction. While the direction is held, nothing leaves the queue; release() flushes it.
   */
  #forwarder(pair: Pair, to: Socket, direction: Direction): (chunk: Buffer) => void {
    const queue: { due: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      if (timer) pair.timers.delete(timer);
      clearTimeout(timer);
      timer = undefined;
      if (this.#held.has(direction) || pair.held.has(direction)) return; // release() calls flush again
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.due <= now) to.write(queue.shift()!.chunk);
      if (queue.length > 0) {
        timer = setTimeout(flush, queue[0]!.due - now);
        pair.timers.add(timer);
      }
    };
    pair.flush[direction] = flush;
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
