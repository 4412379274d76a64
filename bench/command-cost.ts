/**
 * npx tsx bench/command-cost.ts
 *
 * What ioredis' `Command` costs the client to make for an EVALSHA, no server: as `client.evalsha`
 * makes it (the key count, keys and arguments as arrays, which its constructor flattens with
 * Array.prototype.flat), as quorumlock's adapter makes it (one flat array whose own `flat` hands
 * it over: src/clients/ioredis.ts, evalshaWords), and node-redlock's five arguments for comparison.
 * Sizes: one acquire (6 keys, 9 arguments) and a batch of about 64 calls (320 keys, 400
 * arguments). Also the RESP text (`toWritable`) of the batch. Microseconds per command, the
 * median of five runs.
 */
import { Command } from 'ioredis';
import { evalshaWords } from '../src/clients/ioredis.js';
import { median } from './lib.js';

const SHA = 'e0e1f9fabfc9d4800c877a703b823ac0578ff831';
const words = (n: number, stem: string) => Array.from({ length: n }, (_, i) => `${stem}${i}`);
const acquire = { keys: words(6, '{lock:profile:1}:quorumlock:'), args: words(9, 'argument-') };
const batch = { keys: words(320, '{lock:profile:1}:quorumlock:'), args: words(400, 'argument-') };

const asClient = ({ keys, args }: typeof acquire) => new Command('evalsha', [SHA, String(keys.length), keys, args] as never, { replyEncoding: 'utf8' });
const asAdapter = ({ keys, args }: typeof acquire) => new Command('evalsha', evalshaWords(SHA, keys, args), { replyEncoding: 'utf8' });
const nodeRedlock = () => new Command('evalsha', [SHA, '1', 'lock:profile:1', 'value', '10000'], { replyEncoding: 'utf8' });

function microseconds(make: () => Command, count: number, write = false): number {
  const runs: number[] = [];
  for (let run = 0; run < 6; run++) {
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      const command = make();
      command.promise.catch(() => undefined);
      if (write) command.toWritable(undefined as never);
    }
    if (run > 0) runs.push(((performance.now() - started) * 1000) / count); // the first run warms up
  }
  return median(runs);
}

const rows: [string, number][] = [
  ['acquire (17 arguments), as client.evalsha makes it', microseconds(() => asClient(acquire), 100_000)],
  ['acquire, as the adapter makes it', microseconds(() => asAdapter(acquire), 100_000)],
  ["node-redlock's acquire (5 arguments)", microseconds(nodeRedlock, 100_000)],
  ['batch (722 arguments), as client.evalsha makes it', microseconds(() => asClient(batch), 2000)],
  ['batch, as the adapter makes it', microseconds(() => asAdapter(batch), 2000)],
  ['batch, as the adapter makes it, and its RESP text (toWritable)', microseconds(() => asAdapter(batch), 2000, true)],
];
for (const [what, us] of rows) console.log(`${us.toFixed(2).padStart(7)} µs  ${what}`);
