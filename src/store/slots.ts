/**
 * Redis Cluster hash slots, the arithmetic: the CRC16 slot of a text, and a short tag for each
 * slot. Which part of a key is hashed (its hash tag), the slot of a key, and the names that keep
 * companion keys in their key's slot are key naming: store/keys.ts.
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
 * The slot (0..16383) of exactly `hashed`, the part of a key Redis hashes (keys.ts, slotOf,
 * picks it by the hash-tag rule).
 */
export function slotOfHashed(hashed: string): number {
  return crc16(Buffer.from(hashed)) % SLOTS;
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
      // A base-36 counter has no braces: the whole of it is hashed.
      const at = slotOfHashed(tag);
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
