/**
 * npm run bench:drift [-- --quick] [--clients 3] [--duration 40] [--think 0.05]
 *
 * A deterministic drift simulation: the real quorum code against 5 simulated members whose clocks
 * run at chosen rates, swept over drift, driftFactor, ttl and network delay. Writes
 * bench/results/drift.md, drift.json and drift.svg (and drift.png when rsvg-convert is there).
 * --quick: only the headline ttl and delay (~35 s), written to drift-quick.* instead.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { svg } from './chart.js';
import { markdown, shapeCheck } from './report.js';
import { cellKey, grid, runSweep } from './sweep.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    clients: { type: 'string', default: '3' },
    duration: { type: 'string', default: '40' },
    think: { type: 'string', default: '0.05' },
  },
});
const options = { quick: values.quick, clients: Number(values.clients), durationTtls: Number(values.duration), thinkTtl: Number(values.think) };
const specs = grid(options);
console.log(`drift simulation: ${specs.length} cells, ${options.clients} clients, ${options.durationTtls} × ttl each${options.quick ? ' (--quick)' : ''}`);

const cpuStart = process.cpuUsage();
const wallStart = performance.now();
const results = await runSweep(specs, (done, total, cell) => {
  const every = options.quick ? 8 : 24;
  if (done % every === 0 || done === total || (cell.violations > 0 && cell.marginMs <= 0)) {
    const elapsed = (performance.now() - wallStart) / 1000;
    console.log(
      `  ${String(done).padStart(4)}/${total}  ${elapsed.toFixed(0).padStart(4)} s  last: ${cellKey(cell.spec)}: ${cell.valid ? `${cell.violations} violations / ${cell.acquired} holdings` : 'n/a'}`,
    );
  }
});
const cpu = process.cpuUsage(cpuStart);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;

const meta = { clients: options.clients, durationTtls: options.durationTtls, thinkTtl: options.thinkTtl, cpuSeconds };
mkdirSync('bench/results', { recursive: true });
const out = `bench/results/drift${options.quick ? '-quick' : ''}`;
const md = markdown(results, meta);
writeFileSync(`${out}.md`, md + '\n');
// One cell per line, numbers to 4 decimals: small, and diffs between runs stay readable.
const round = (_key: string, value: unknown) => (typeof value === 'number' && !Number.isInteger(value) ? Number(value.toFixed(4)) : value);
const cellLines = results.map((cell) => `  ${JSON.stringify(cell, round)}`).join(',\n');
writeFileSync(
  `${out}.json`,
  `{\n "meta": ${JSON.stringify({ ...meta, quick: options.quick, node: process.version }, round)},\n "cells": [\n${cellLines}\n ]\n}\n`,
);
const subtitle = `5 simulated members, real quorumlock code (tryAcquire, quarantine off), ${options.clients} clients holding up to their full validity; ${options.durationTtls} × ttl simulated per cell; seeded`;
writeFileSync(`${out}.svg`, svg(results, subtitle));
const png = spawnSync('rsvg-convert', ['-o', `${out}.png`, `${out}.svg`]);
const pngNote = png.error ? ' (no rsvg-convert: no PNG)' : png.status === 0 ? `, ${out}.png` : ` (rsvg-convert failed: ${png.stderr})`;

const check = shapeCheck(results);
console.log(`\n${md.split('## Headline')[0]!.split('## Shape check')[1]!.trim()}\n`);
console.log(`wrote ${out}.md, .json, .svg${pngNote}; ${cpuSeconds.toFixed(1)} s CPU, ${((performance.now() - wallStart) / 1000).toFixed(1)} s wall`);
if (check.coveredWithViolations.length > 0 || check.zeroDriftWithViolations.length > 0) {
  console.log('FINDING: violations where the timing model says none are possible (see the shape check)');
  process.exitCode = 1;
}
