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
  sharedName,
  trustArgs,
  type AcquireRequest,
} from '../../src/store/protocol.js';
import { acquireLua, fenceLua, leaveLua, releaseLua } from '../../src/lua/sources.js';
import { fenceField, KEYS_PER_RESOURCE, resourceKeys, waiterChannel } from '../../src/store/keys.js';

describe('script protocol', () => {
  it('acquire arguments are strings in the order acquire.lua reads them', () => {
    const request: AcquireRequest = { value: 'v', ttlMs: 1000, waiter: { id: 'w.1', ticket: 17, leaseMs: 3000 }, quarantineMs: 60_000, fencing: true };
    expect(acquireArgs(request, 'e1')).toEqual(['v', '1000', 'w.1', '17', '3000', '60000', '1', 'e1']);
    expect(acquireArgs({ ...request, fencing: false, handover: { value: 'h', stamp: 's', abandoned: '' } }, '')).toEqual([
      'v',
      '1000',
      'w.1',
      '17',
      '3000',
      '60000',
      '0',
      '',
      'h',
      's',
      '',
    ]);
  });

  it('acquire replies decode into the vote itself', () => {
    expect(decodeAcquire(acquireReply.settled(), 'e1', false)).toEqual({ vote: 'locked', epoch: { id: 'e1', settled: true } });
    expect(decodeAcquire(acquireReply.settled(), '', false)).toEqual({ vote: 'locked' });
    expect(decodeAcquire([...acquireReply.locked(0, 'e2', { highest: 7, trusted: true })], '', true)).toEqual({
      vote: 'locked',
      epoch: { id: 'e2', settled: true },
      fence: { highest: 7, trusted: true },
    });
    expect(decodeAcquire([...acquireReply.locked(250, 'e3')], '', false)).toEqual({
      vote: 'quarantined',
      quarantinedForMs: 250,
      epoch: { id: 'e3', settled: false },
    });
    // A status the decoder does not know is refused, never read as a refusal or a yes.
    expect(() => decodeAcquire([4], '', false)).toThrow(/unexpected reply from the acquire script/);
    expect(() => decodeAcquire([7, 0, 0, '', 0, 0], '', false)).toThrow(/unexpected reply from the acquire script/);
    expect(decodeAcquire([...acquireReply.refused('taken', 900, 2, 'e4', 0)], '', true)).toEqual({
      vote: 'taken',
      heldForMs: 900,
      place: 2,
      epoch: { id: 'e4', settled: true },
    });
    // -2: held without an expiry (a user's key): no expiry to wait for.
    expect(decodeAcquire([...acquireReply.refused('taken', -2)], '', false)).toEqual({ vote: 'taken' });
    expect(decodeAcquire([...acquireReply.refused('queued', -1, 0)], '', false)).toEqual({ vote: 'queued', place: 0 });
    // The script's 7th element: the key holds the caller's handover value.
    expect(decodeAcquire([...acquireReply.refused('taken', 900, 0, '', -1, false, true)], '', false)).toEqual({
      vote: 'taken',
      heldForMs: 900,
      place: 0,
      handedOver: true,
    });
  });

  it('extend replies: every code decodes, an unknown one throws rather than reading as a yes', () => {
    for (const reply of ['extended', 'gone', 'taken'] as const) expect(decodeExtend(extendReply(reply))).toBe(reply);
    expect(() => decodeExtend(2)).toThrow(/unexpected reply from the extend script/);
    expect(extendArgs({ value: 'v', ttlMs: 500 })).toEqual(['v', '500']);
  });

  it('trust arguments', () => {
    expect(trustArgs('new', 60_000)).toEqual(['new', '60000']);
    expect(trustArgs('floor', 42)).toEqual(['floor', '42']);
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
