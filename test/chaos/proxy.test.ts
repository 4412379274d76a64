/** The chaos proxy in front of a local echo server: latency, order, blackhole and healing. */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { TcpProxy } from './proxy.js';

let echo: Server;
let proxy: TcpProxy;
const sockets: Socket[] = [];

beforeEach(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  proxy = await TcpProxy.start({ host: '127.0.0.1', port: (echo.address() as { port: number }).port });
});

afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  await proxy.close();
  await new Promise((resolve) => echo.close(resolve));
});

async function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const socket = connect(proxy.port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  socket.on('data', (chunk) => (text += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => text, closed };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

it('forwards both ways, and adds the latency in each direction', async () => {
  const { socket, received } = await open();
  socket.write('ping');
  await until(() => received() === 'ping');

  proxy.latencyMs = 100;
  const started = performance.now();
  socket.write('slow');
  await until(() => received() === 'pingslow');
  expect(performance.now() - started).toBeGreaterThanOrEqual(200); // 100 there, 100 back: never early
});

it('keeps the order when the latency drops while chunks are in flight', async () => {
  const { socket, received } = await open();
  proxy.latencyMs = 150;
  socket.write('a');
  await new Promise((resolve) => setTimeout(resolve, 20));
  proxy.latencyMs = 0;
  socket.write('b');
  socket.write('c');
  await until(() => received().length === 3);
  expect(received()).toBe('abc');
});

it('blackhole drops everything, on old and new connections; the end of it closes the broken ones', async () => {
  const before = await open();
  proxy.setBlackhole(true);
  before.socket.write('lost');
  const during = await open(); // accepted, never forwarded
  during.socket.write('lost too');
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(before.received()).toBe('');
  expect(during.received()).toBe('');

  proxy.setBlackhole(false);
  await Promise.all([before.closed, during.closed]); // their byte streams have gaps: a client must reconnect
  const after = await open();
  after.socket.write('back');
  await until(() => after.received() === 'back');
});

it('leaves connections that lost nothing open when the blackhole ends', async () => {
  const idle = await open();
  proxy.setBlackhole(true);
  proxy.setBlackhole(false);
  idle.socket.write('still here');
  await until(() => idle.received() === 'still here');
});

it('hold delays one direction without losing or reordering anything; release delivers it in order', async () => {
  const { socket, received } = await open();
  proxy.hold('toServer');
  for (const part of ['a', 'b', 'c']) {
    socket.write(part);
    await new Promise((resolve) => setTimeout(resolve, 10)); // separate chunks
  }
  const late = await open(); // a connection opened during the hold is held too
  late.socket.write('z');
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(received()).toBe('');
  expect(late.received()).toBe('');
  proxy.release('toServer');
  await until(() => received() === 'abc' && late.received() === 'z');
  socket.write('d'); // and forwards as before
  await until(() => received() === 'abcd');
});

it('a hold of the replies leaves the commands going: the server runs them, the client hears later', async () => {
  const { socket, received } = await open();
  proxy.hold('toClient');
  socket.write('x');
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(received()).toBe('');
  proxy.release('toClient');
  await until(() => received() === 'x');
});

it('retarget sends new connections elsewhere and closes the open ones', async () => {
  const other = createServer((socket) => socket.end('other'));
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  try {
    const before = await open();
    proxy.retarget({ host: '127.0.0.1', port: (other.address() as { port: number }).port });
    await before.closed;
    const after = await open();
    await until(() => after.received() === 'other');
  } finally {
    await new Promise((resolve) => other.close(resolve));
  }
});
