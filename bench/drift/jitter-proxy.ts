/**
 * A TCP proxy on 127.0.0.1 that delays each chunk by a random 0 or 1 ms (order kept per
 * direction). One per (client, member) connection makes the order in which two clients' commands
 * reach a member differ from member to member, as on a real network. On plain loopback from one
 * process it hardly ever does: every member sees the clients in the order they were written.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface JitterProxy {
  port: number;
  close(): Promise<void>;
}

/** Forwards to `to`, each chunk after 0 or 1 ms at random, never overtaking an earlier one. */
function forwarder(to: Socket, random: () => number): (chunk: Buffer) => void {
  const queue: Buffer[] = [];
  let busy = false;
  const next = () => {
    const chunk = queue.shift();
    if (!chunk) {
      busy = false;
      return;
    }
    if (!to.destroyed) to.write(chunk);
    schedule();
  };
  const schedule = () => {
    if (queue.length === 0) {
      busy = false;
      return;
    }
    busy = true;
    if (random() < 0.5) setImmediate(next);
    else setTimeout(next, 1);
  };
  return (chunk) => {
    queue.push(chunk);
    if (!busy) schedule();
  };
}

export function startJitterProxy(target: { host: string; port: number }, random: () => number): Promise<JitterProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', forwarder(upstream, random));
    upstream.on('data', forwarder(client, random));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as { port: number }).port,
        close: () => {
          for (const socket of sockets) socket.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      }),
    );
  });
}
