/**
 * npm run chaos [-- --seconds 120] [--scenario kill-restart|combined] [--no-quarantine] [--no-fencing] [--seed 42] [--no-repair-wait]
 *
 * Runs each scenario (or one) for the given seconds (default 120; the combined scenario 60)
 * against fresh members, prints Markdown tables and writes bench/results/chaos.json (the combined
 * scenario: bench/results/chaos-combined.json, counterexamples included). With
 * quarantine on (the default) kill-restart runs a second time with quarantine and fencing off:
 * the unprotected baseline, where the restart hazard should show as violations. The combined
 * scenario (every fault kind interleaved, using() with fenced writes to a store) always fences;
 * --seed replays its schedule, --no-quarantine turns its quarantine off, --no-repair-wait lets
 * faults hit members whose fence counter was not synced yet (see CombinedOptions.waitForRepair).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CombinedResult } from './combined-check.js';
import { runCombined } from './combined.js';
import { runScenario, scenarioNames, type RunOptions, type ScenarioName, type ScenarioResult } from './scenarios.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    scenario: { type: 'string' },
    seed: { type: 'string' },
    'no-quarantine': { type: 'boolean', default: false },
    'no-fencing': { type: 'boolean', default: false },
    'no-repair-wait': { type: 'boolean', default: false },
  },
});
const number = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!(value > 0) && !(name === 'seed' && value === 0)) throw new Error(`--${name} must be a positive number, got ${text}`);
  return value;
};
const givenSeconds = number('seconds', values.seconds);
const seed = number('seed', values.seed);
const allNames: readonly string[] = [...scenarioNames, 'combined'];
if (values.scenario !== undefined && !allNames.includes(values.scenario)) {
  throw new Error(`--scenario must be one of ${allNames.join(', ')}; got ${values.scenario}`);
}
const selected = values.scenario ? [values.scenario] : allNames;
const seconds = givenSeconds ?? 120;
const options: RunOptions = { seconds, quarantine: !values['no-quarantine'], fencing: !values['no-fencing'] };

const runs: [ScenarioName, RunOptions][] = scenarioNames.filter((name) => selected.includes(name)).map((name) => [name, options]);
if (options.quarantine && selected.includes('kill-restart')) runs.push(['kill-restart', { seconds, quarantine: false, fencing: false }]);

const results: ScenarioResult[] = [];
for (const [name, runOptions] of runs) {
  console.error(`running ${name} (quarantine ${runOptions.quarantine ? 'on' : 'off'}, fencing ${runOptions.fencing ? 'on' : 'off'}) for ${seconds} s`);
  const result = await runScenario(name, runOptions);
  console.error(`  ${JSON.stringify(result)}`);
  results.push(result);
}

let combined: CombinedResult | undefined;
if (selected.includes('combined')) {
  const combinedSeconds = givenSeconds ?? 60;
  console.error(
    `running combined (quarantine ${options.quarantine ? 'on' : 'off'}, fencing on${seed === undefined ? '' : `, seed ${seed}`}) for ${combinedSeconds} s`,
  );
  combined = await runCombined({
    seconds: combinedSeconds,
    quarantine: options.quarantine,
    waitForRepair: !values['no-repair-wait'],
    ...(seed === undefined ? {} : { seed }),
  });
  console.error(`  ${JSON.stringify({ ...combined, counterexamples: combined.counterexamples.length, timeline: combined.timeline.length })}`);
}

const ms = (value: number) => (Number.isNaN(value) ? '–' : value.toFixed(1));
if (results.length > 0) {
  const label = (r: ScenarioResult) => `${r.scenario}${r.fencing ? '' : ', fencing off'}`;
  console.log(`\n5 masters, 4 clients on one resource, ${seconds} s per scenario (backend: ${results[0]?.backend ?? '-'}); times in ms\n`);
  console.log('| scenario | quarantine | acquisitions | violations | max overlap (ms) | failed acquires | p99 acquire latency (ms) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${label(r)} | ${r.quarantine ? 'on' : 'off'} | ${r.acquisitions} | ${r.violations} | ${ms(r.maxOverlapMs)} | ${r.failedAcquires} | ${ms(r.p99AcquireMs)} |`,
    );
  }
  console.log('\nViolations: overlap / fence / majority-window. Faults injected:');
  for (const r of results) {
    const faults = Object.entries(r.faults)
      .map(([key, value]) => `${key} ${value}`)
      .join(', ');
    console.log(
      `- ${label(r)}, quarantine ${r.quarantine ? 'on' : 'off'}: ${r.overlapViolations} / ${r.fenceViolations} / ${r.windowViolations}; ${r.fenced} fenced holdings; ${faults}`,
    );
  }
}

if (combined) {
  const c = combined;
  const f = c.faults;
  const entries = (record: Record<string, number>) =>
    Object.entries(record)
      .map(([key, value]) => `${key} ${value}`)
      .join(', ') || 'none';
  console.log(
    `\nCombined faults, ${c.seconds} s, seed ${c.seed}: 5 members (one a master + replica pair), ${c.clients} clients on ${c.resources} resources, ttl ${c.ttl} ms, quarantine ${c.quarantine ? 'on' : 'off'}, fencing on\n`,
  );
  console.log(
    '| acquisitions | extensions | violations | kills (in-flight commands) | holds (ms) | failovers / failbacks (full resyncs) | pauses at extensions (rode through) | writes accepted / refused (stale refused) |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${c.acquisitions} | ${c.extensions} | ${c.violations} | ${f.kills} (${f.inFlightAtKill}) | ${f.holds} (${f.heldMs}) | ${f.failovers} / ${f.failbacks} (${f.fullResyncs}) | ${f.pauses} (${f.pausedExtensionsSurvived}/${f.pausedExtensions}) | ${c.writes.accepted} / ${c.writes.refused} (${c.writes.staleRefused}) |`,
  );
  console.log(
    `\nViolations: overlap ${c.overlapViolations}, fence order ${c.fenceViolations}, store order ${c.storeOrderViolations}, stale accepted ${c.staleAccepted}, refused while held ${c.refusedWhileHeld}, unfenced ${c.unfenced}.`,
  );
  console.log(
    `Late writes (sent after the lock was lost) the store accepted, no higher token having reached it yet: ${c.writes.lateAccepted}, of which after a successor had acquired: ${c.writes.lateAcceptedAfterSuccessor}.`,
  );
  console.log(
    `Overrunning holders ${c.overruns}; locks lost: ${entries(c.lost)}; failed extensions: ${entries(c.extensionFailures)}; failed acquires: ${entries(c.failedBy)}; acquire p50/p99 ${ms(c.p50AcquireMs)}/${ms(c.p99AcquireMs)} ms.`,
  );
  console.log(
    `Liveness: longest stretch without an acquisition ${c.liveness.longestGapMs} ms; acquisitions with 0/1/2 members impaired ${c.liveness.byImpaired.join('/')}; ${c.liveness.interFaultSpansWithAcquisition} of ${c.liveness.interFaultSpans} spans between fault starts saw one; most impaired at once ${f.maxImpaired}; faults not started for lack of budget ${f.skipped}; fence counters synced again ${f.longestRepairMs} ms after a quarantine at the longest (${f.unrepaired} not yet at the stop).`,
  );
  for (const example of c.counterexamples) console.log(`\nCOUNTEREXAMPLE (seed ${c.seed}):\n${example}`);
}

// Each in its own file, so a run of one does not overwrite the other's recorded results.
mkdirSync('bench/results', { recursive: true });
const stamp = { date: new Date().toISOString(), node: process.version };
if (results.length > 0) writeFileSync('bench/results/chaos.json', JSON.stringify({ ...stamp, seconds, results }, null, 2));
if (combined) writeFileSync('bench/results/chaos-combined.json', JSON.stringify({ ...stamp, ...combined }, null, 2));
