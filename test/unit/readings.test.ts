/**
 * The CLI's reading of an epoch hash (src/cli/readings.ts, epochOf), judged as the scripts judge
 * it: its quarantine counted from the epoch's start, or with --quarantine-from-restart from the
 * restart the epoch proved (src/lua/_epoch.lua, quarantineLeft).
 */
import { describe, expect, it } from 'vitest';
import { epochOf } from '../../src/cli/readings.js';
import { EPOCH_FIELDS } from '../../src/store/keys.js';
import { serverFacts } from '../../src/store/server.js';

const server = serverFacts('# Server\r\nrun_id:aaaa\r\n# Replication\r\nrole:master\r\nmaster_replid:bbbb\r\n');
const hash = (fields: Partial<Record<(typeof EPOCH_FIELDS)[number], string>>) => EPOCH_FIELDS.map((name) => fields[name] ?? null);
const now = 100_000;

describe('epochOf: the quarantine as a client sees it', () => {
  it('counts from the epoch start by default, from the proven restart with fromRestart', () => {
    const values = hash({ id: '1', since: String(now - 1_000), run_id: server.runId, replid: server.replid, restart: String(now - 9_000) });
    expect(epochOf(values, server, now, 5_000)).toMatchObject({ state: 'quarantined', ageMs: 1_000, leftMs: 4_000 });
    expect(epochOf(values, server, now, 5_000, true)).toMatchObject({ state: 'trusted', ageMs: 1_000 });
    expect(epochOf(values, server, now, 10_000, true)).toMatchObject({ state: 'quarantined', leftMs: 1_000 });
  });

  it('without a proven restart, fromRestart counts from the epoch start too', () => {
    const values = hash({ id: '1', since: String(now - 1_000), run_id: server.runId, replid: server.replid });
    expect(epochOf(values, server, now, 5_000, true)).toMatchObject({ state: 'quarantined', leftMs: 4_000 });
  });
});
