/**
 * npm run chaos [-- --seconds 120] [--scenario kill-restart] [--no-quarantine] [--no-fencing]
 *
 * Runs each scenario (or one) for the given seconds against 5 fresh masters, prints a Markdown
 * table and writes bench/results/chaos.json. With quarantine on (the default) kill-restart runs a
 * second time with quarantine and fencing off: the unprotected baseline, where the restart hazard
 * should show as violations.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runScenario, scenarioNames, type RunOptions, type ScenarioName, type ScenarioResult } from './scenarios.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    scenario: { type: 'string' },
    'no-quarantine': { type: 'boolean', default: false },
    'no-fencing': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds}`);
if (values.scenario !== undefined && !scenarioNames.includes(values.scenario as ScenarioName)) {
  throw new Error(`--scenario must be one of ${scenarioNames.join(', ')}; got ${values.scenario}`);
}
const selected = values.scenario ? [values.scenario as ScenarioName] : scenarioNames;
const options: RunOptions = { seconds, quarantine: !values['no-quarantine'], fencing: !values['no-fencing'] };

const runs: [ScenarioName, RunOptions][] = selected.map((name) => [name, options]);
if (options.quarantine && selected.includes('kill-restart')) runs.push(['kill-restart', { seconds, quarantine: false, fencing: false }]);

const results: ScenarioResult[] = [];
for (const [name, runOptions] of runs) {
  console.error(`running ${name} (quarantine ${runOptions.quarantine ? 'on' : 'off'}, fencing ${runOptions.fencing ? 'on' : 'off'}) for ${seconds} s`);
  const result = await runScenario(name, runOptions);
  console.error(`  ${JSON.stringify(result)}`);
  results.push(result);
}

const ms = (value: number) => (Number.isNaN(value) ? '–' : value.toFixed(1));
const label = (r: ScenarioResult) => `${r.scenario}${r.fencing ? '' : ', fencing off'}`;
console.log(`\n5 masters, 4 clients on one resource, ${seconds} s per scenario (backend: ${results[0]?.backend ?? '-'}); times in ms\n`);
console.log('| scenario | quarantine | acquisitions | violations | max overlap (ms) | failed acquires | p99 acquire latency (ms) |');
console.log('|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${label(r)} | ${r.quarantine ? 'on' : 'off'} | ${r.acquisitions} | ${r.violations} | ${ms(r.maxOverlapMs)} | ${r.failedAcquires} | ${ms(r.p99AcquireMs)} |`);
}
console.log('\nViolations: overlap / fence / majority-window. Faults injected:');
for (const r of results) {
  const faults = Object.entries(r.faults).map(([key, value]) => `${key} ${value}`).join(', ');
  console.log(`- ${label(r)}, quarantine ${r.quarantine ? 'on' : 'off'}: ${r.overlapViolations} / ${r.fenceViolations} / ${r.windowViolations}; ${r.fenced} fenced holdings; ${faults}`);
}

mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/chaos.json', JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds, results }, null, 2));
