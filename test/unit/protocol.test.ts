/**
 * store/protocol.ts: what simulators build with the reply encoders is what members decode, and
 * argument encoders and readers agree. (The real scripts' replies are decoded the same way in
 * test/model, which runs the Lua, and in every integration test.)
 */
import { describe, expect, it } from 'vitest';
import {
  acquireArgs,
  acquireReply,
  decodeAcquire,
  decodeExtend,
  extendArgs,
  extendReply,
  NOT_COUNTING,
  readAcquireArgs,
  readExtendArgs,
  readTrustArgs,
  sharedName,
  trustArgs,
  type AcquireRequest,
} from '../../src/store/protocol.js';
import { acquireLua, fenceLua, leaveLua, releaseLua } from '../../src/lua/sources.js';
import { fenceField, KEYS_PER_RESOURCE, resourceKeys, waiterChannel } from '../../src/store/keys.js';

const asScriptSees = (args: readonly (string | number)[]) => args.map(String);

describe('script protocol', () => {
  it('acquire arguments survive the trip to a script', () => {
    const request: AcquireRequest = { value: 'v', ttlMs: 1000, waiter: { id: 'w.1', ticket: 17, leaseMs: 3000 }, quarantineMs: 60_000, fencing: true };
    expect(readAcquireArgs(asScriptSees(acquireArgs(request, 'e1')))).toEqual({ ...request, settled: 'e1' });
    expect(readAcquireArgs(asScriptSees(acquireArgs({ ...request, fencing: false }, '')))).toMatchObject({ fencing: false, settled: '' });
  });

  it('acquire replies decode to what they were built from', () => {
    expect(decodeAcquire(acquireReply.settled(), 'e1', false)).toEqual({ quarantinedForMs: 0, epoch: 'e1' });
    expect(decodeAcquire(acquireReply.settled(), '', false)).toEqual({ quarantinedForMs: 0 });
    expect(decodeAcquire([...acquireReply.locked(0, 'e2', { highest: 7, trusted: true })], '', true)).toEqual({
      quarantinedForMs: 0,
      epoch: 'e2',
      fence: { highest: 7, trusted: true },
    });
    expect(decodeAcquire([...acquireReply.locked(250, 'e3')], '', false)).toEqual({ quarantinedForMs: 250, epoch: 'e3' });
    expect(decodeAcquire([...acquireReply.notMaster()], '', false)).toEqual({ quarantinedForMs: NOT_COUNTING, notCounting: 'not a master' });
    expect(decodeAcquire([...acquireReply.refused('taken', 900, 2, 'e4', 0)], '', true)).toEqual({
      why: 'taken',
      heldForMs: 900,
      place: 2,
      epoch: 'e4',
      quarantinedForMs: 0,
    });
    // -2: held without an expiry (a user's key): no expiry to wait for.
    expect(decodeAcquire([...acquireReply.refused('taken', -2)], '', false)).toEqual({ why: 'taken', heldForMs: undefined, place: undefined });
    expect(decodeAcquire([...acquireReply.refused('queued', -1, 0)], '', false)).toEqual({ why: 'queued', heldForMs: undefined, place: 0 });
    // The script's 7th element: the key holds the caller's handover value.
    expect(decodeAcquire([...acquireReply.refused('taken', 900, 0, '', -1, false, true)], '', false)).toEqual({
      why: 'taken',
      heldForMs: 900,
      place: 0,
      handedOver: true,
    });
  });

  it('extend replies: every code decodes, an unknown one throws rather than reading as a yes', () => {
    for (const reply of ['extended', 'gone', 'taken'] as const) expect(decodeExtend(extendReply(reply))).toBe(reply);
    expect(() => decodeExtend(2)).toThrow(/unexpected reply from the extend script/);
    expect(readExtendArgs(asScriptSees(extendArgs('v', 500)))).toEqual({ value: 'v', ttlMs: 500 });
  });

  it('trust arguments', () => {
    expect(readTrustArgs(asScriptSees(trustArgs('new', 60_000)))).toEqual({ mode: 'new', n: 60_000 });
    expect(readTrustArgs(asScriptSees(trustArgs('floor', 42)))).toEqual({ mode: 'floor', n: 42 });
  });

  it("a waiter's channel is its listener's: the id up to its last '.', without the shared mark", () => {
    expect(waiterChannel('tok.3.7')).toBe('quorumlock:waiter:tok.3');
    expect(waiterChannel(sharedName('tok.3.8'))).toBe('quorumlock:waiter:tok.3');
    expect(waiterChannel('plain')).toBe('quorumlock:waiter:plain');
  });

  it('the names the scripts spell themselves are the ones keys.ts gives', () => {
    // release.lua and leave.lua announce on the waiter's listener channel; fence.lua keeps fence:<key>.
    const channelPrefix = waiterChannel('');
    for (const script of [releaseLua, leaveLua]) {
      expect(script).toContain(`local WAITER_CHANNEL = '${channelPrefix}'`);
      expect(script).toContain('notify(head, lock, request and handOver(i, n, head, request))');
    }
    // _keys.lua counts the keys per resource as keys.ts makes them.
    for (const script of [acquireLua, releaseLua, leaveLua]) expect(script).toContain(`keys % ${KEYS_PER_RESOURCE} ~= 0`);
    expect(resourceKeys(['r'])).toHaveLength(KEYS_PER_RESOURCE);
    expect(fenceLua).toContain(`'${fenceField('')}' .. KEYS[i]`);
  });
});
