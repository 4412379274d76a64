/**
 * Redis Cluster hash slots, for members that are clusters. A script runs on one node and may
 * only touch keys of one slot, so every key a call sends (lock keys, their lines, the epoch) must
 * hash to the same slot; these helpers name keys so that they do.
 */

const SLOTS = 16384;

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster uses; byte table built once. */
const table = new Uint16Array(256);
for (let byte = 0; byte < 256; byte++) {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  table[byte] = crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ table[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/**
 * The hash tag of `key` by Redis' rule: the text between the first `{` and the first `}` after
 * it, when not empty; undefined when the key has none (then the whole key is hashed).
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** The cluster slot of `key` (0..16383), as Redis computes it (CLUSTER KEYSLOT). */
export function slotOf(key: string): number {
  return crc16(Buffer.from(hashTagOf(key) ?? key)) % SLOTS;
}

let tags: string[] | undefined;

/**
 * A short name whose slot is `slot`: the shortest base-36 counter that lands there, so every
 * client and version picks the same one. The table is built on first use (~150k checksums).
 */
export function tagOfSlot(slot: number): string {
  if (!tags) {
    const found: string[] = new Array<string>(SLOTS);
    let missing = SLOTS;
    for (let counter = 0; missing > 0; counter++) {
      const tag = counter.toString(36);
      const at = slotOf(tag);
      if (found[at] === undefined) {
        found[at] = tag;
        missing--;
      }
    }
    tags = found;
  }
  return tags[slot]!;
}

/** Every slot's tag, in slot order: e.g. to write something to every slot of a cluster. */
export function allSlotTags(): string[] {
  tagOfSlot(0);
  return tags!.slice();
}

/**
 * A key for `key`'s companion data (`suffix`) in the same slot as `key`, once the client's
 * keyPrefix is put in front of both. Keys whose full name has a hash tag keep it (the suffix is
 * appended); others are wrapped in braces, which hashes the same text; when that cannot work (a
 * prefix outside the braces, a stray `}`), the key borrows its slot's tag instead. A prefix with
 * a `{` but no complete tag is refused up front (see checkClusterPrefix).
 */
export function companionKey(key: string, suffix: string, prefix = ''): string {
  const full = prefix + key;
  if (hashTagOf(full) !== undefined) return `${key}:${suffix}`;
  if (prefix === '' && !key.includes('}')) return `{${key}}:${suffix}`;
  return `{${tagOfSlot(slotOf(full))}}:${suffix}:${key}`;
}

/**
 * Whether keys built with `companionKey` land in their key's slot under this keyPrefix: a prefix
 * without `{`, or with a complete hash tag (then every key is in that tag's slot).
 */
export function clusterPrefixWorks(prefix: string): boolean {
  return !prefix.includes('{') || hashTagOf(prefix) !== undefined;
}
