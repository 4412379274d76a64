/** Cluster slots: the checksum against ioredis' own router, and keys that stay in their slot. */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { checkSameSlot, checkMembers } from '../../src/options/check.js';
import { allSlotTags, tagOfSlot } from '../../src/store/slots.js';
import { clusterEpochKey, clusterPrefixWorks, companionKey, EPOCH_KEY, hashTagOf, resourceKeys, slotOf } from '../../src/store/keys.js';

// The package ioredis routes cluster commands with: our slots must be its slots.
const ioredisSlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** Names with braces in every awkward place, unicode, and plain ones. */
const awkward = [
  'orders:42',
  'a{b',
  'a}b',
  '{}',
  '{a}',
  'a{}b',
  'x{}{y}',
  '{a}{b}',
  '}{a}',
  'a{b}c',
  '{{a}}',
  'ünïcödé',
  'ключ',
  '🔒',
  '{',
  '}',
  'a:b:c',
  'a{b{c}d}',
];

function randomName(seed: number): string {
  const alphabet = 'ab{}:x';
  let name = '';
  for (let i = 0, n = 1 + (seed % 9); i < n; i++) name += alphabet[(seed * 7919 + i * 104729) % alphabet.length];
  return name;
}

describe('slotOf', () => {
  it('matches CLUSTER KEYSLOT examples from the Redis documentation', () => {
    expect(slotOf('foo')).toBe(12182);
    expect(slotOf('bar')).toBe(5061);
    expect(slotOf('{user1000}.following')).toBe(slotOf('{user1000}.followers'));
    expect(hashTagOf('foo{}{bar}')).toBeUndefined();
    expect(hashTagOf('foo{{bar}}zap')).toBe('{bar');
  });

  it('agrees with the slot ioredis routes by, for awkward and random names', () => {
    // Except where the first braces are empty ("x{}{y}"): Redis then hashes the whole key, while
    // cluster-key-slot 1.1 reads on to the next "}" (ioredis follows the MOVED reply). Redis'
    // rule is what decides whether a script's keys share a slot; the cluster tests check it
    // against CLUSTER KEYSLOT itself.
    const firstBracesEmpty = (name: string) => name.indexOf('{') !== -1 && name[name.indexOf('{') + 1] === '}';
    const names = [...awkward, ...Array.from({ length: 2000 }, (_, i) => randomName(i))].filter((name) => !firstBracesEmpty(name));
    expect(names.length).toBeGreaterThan(1000);
    for (const name of names) expect(slotOf(name), name).toBe(ioredisSlot(name));
  });
});

describe('slot tags', () => {
  it('name every one of the 16384 slots, each tag hashing to its own slot', () => {
    const tags = allSlotTags();
    expect(tags).toHaveLength(16384);
    expect(new Set(tags).size).toBe(16384);
    tags.forEach((tag, slot) => expect(slotOf(tag)).toBe(slot));
    expect(tagOfSlot(slotOf('orders:42'))).toBe(tags[slotOf('orders:42')]);
  });
});

describe('companionKey', () => {
  const prefixes = ['', 'app:', '{app}:', 'a}b:', 'x:{tenant-1}:'];

  it('keeps a line or epoch key in its lock key slot, under every keyPrefix a cluster accepts', () => {
    const names = [...awkward, ...Array.from({ length: 500 }, (_, i) => randomName(i))];
    for (const prefix of prefixes) {
      expect(clusterPrefixWorks(prefix)).toBe(true);
      for (const name of names) {
        const slot = slotOf(prefix + name);
        expect(slotOf(prefix + companionKey(name, 'quorumlock:line', prefix)), `${prefix}|${name}`).toBe(slot);
        expect(slotOf(prefix + clusterEpochKey(prefix + name)), `${prefix}|${name}`).toBe(slot);
      }
    }
  });

  it('keeps the key names single servers have always used', () => {
    expect(resourceKeys(['orders:42'])).toEqual([
      'orders:42',
      '{orders:42}:quorumlock:line',
      '{orders:42}:quorumlock:leases',
      '{orders:42}:quorumlock:readers',
      '{orders:42}:quorumlock:handover',
    ]);
    expect(resourceKeys(['{job}:a'])).toEqual([
      '{job}:a',
      '{job}:a:quorumlock:line',
      '{job}:a:quorumlock:leases',
      '{job}:a:quorumlock:readers',
      '{job}:a:quorumlock:handover',
    ]);
    expect(EPOCH_KEY).toBe('quorumlock:epoch');
  });

  it('refuses a cluster keyPrefix with an unfinished hash tag', () => {
    expect(clusterPrefixWorks('app{')).toBe(false);
    expect(clusterPrefixWorks('app{}:')).toBe(false);
    const cluster = { isCluster: true, options: { keyPrefix: 'app{' }, startupNodes: [{ host: '127.0.0.1', port: 7000 }], defineCommand() {} };
    expect(() => checkMembers([cluster])).toThrow(
      expect.objectContaining({ name: 'RangeError', parameter: 'members[0]', message: expect.stringContaining('complete hash tag') }),
    );
  });
});

describe('checkSameSlot', () => {
  const cluster = { id: 'cluster:127.0.0.1:7000', isCluster: true, keyPrefix: '' };
  const single = { id: '127.0.0.1:6379/0', isCluster: false, keyPrefix: '' };

  it('rejects resources in different slots when a member is a cluster, naming both and the fix', () => {
    expect(() => checkSameSlot(['foo', 'bar'], [single, cluster])).toThrow(
      expect.objectContaining({
        name: 'RangeError',
        parameter: 'resources',
        message: expect.stringMatching(/"foo" is in slot 12182, "bar" in slot 5061.*shared hash tag/),
      }),
    );
  });

  it('accepts a shared hash tag, one resource, or members that are all single servers', () => {
    expect(() => checkSameSlot(['{job}:foo', '{job}:bar'], [cluster])).not.toThrow();
    expect(() => checkSameSlot(['foo'], [cluster])).not.toThrow();
    expect(() => checkSameSlot(['foo', 'bar'], [single])).not.toThrow();
    // A keyPrefix with a hash tag puts every key in one slot.
    expect(() => checkSameSlot(['foo', 'bar'], [{ ...cluster, keyPrefix: '{app}:' }])).not.toThrow();
  });
});
