/**
 * npm run bench:render: bench/results/bench.md again from bench/results/bench.json, with the
 * report as it is now (bench/report.ts), without running anything.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { report, type Results } from './report.js';

const results = JSON.parse(readFileSync('bench/results/bench.json', 'utf8'), (_, v: unknown) => (v === 'Infinity' ? Infinity : v)) as Results;
writeFileSync('bench/results/bench.md', `${report(results)}\n`);
console.error('wrote bench/results/bench.md');
