/**
 * isUntouchedGenesis (src/store/keys.ts): which Cluster slot markers quorumlock/testing keeps
 * across a reset. Only a marker exactly as trust.lua left it, in the node's current lineage.
 */
import { describe, expect, it } from 'vitest';
import { isUntouchedGenesis } from '../../src/store/keys.js';

const RUN = 'a'.repeat(40);
const REPL = 'b'.repeat(40);
const fresh = { id: '1700000000000001', since: '1700000000000', run_id: RUN, replid: REPL, evicted: '0', genesis: '1' };

describe('isUntouchedGenesis', () => {
  it('keeps a brand-new marker nothing wrote to since', () => {
    expect(isUntouchedGenesis(fresh, RUN, REPL)).toBe(true);
  });

  it('declares again a marker with a fence counter, a floor, no genesis, or another lineage', () => {
    expect(isUntouchedGenesis({ ...fresh, 'fence:a': '3', max: '3' }, RUN, REPL)).toBe(false);
    expect(isUntouchedGenesis({ ...fresh, floor: '0' }, RUN, REPL)).toBe(false);
    const { genesis: _genesis, ...notGenesis } = fresh;
    expect(isUntouchedGenesis({ ...notGenesis, max: '1' }, RUN, REPL)).toBe(false);
    expect(isUntouchedGenesis(notGenesis, RUN, REPL)).toBe(false);
    expect(isUntouchedGenesis(fresh, 'c'.repeat(40), REPL)).toBe(false); // the node restarted
    expect(isUntouchedGenesis(fresh, RUN, 'd'.repeat(40))).toBe(false); // a failover or resync
    expect(isUntouchedGenesis({}, RUN, REPL)).toBe(false);
  });
});
