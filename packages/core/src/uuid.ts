/**
 * Random (version 4) UUIDs as flat strings, for session and request ids (SPEC §4).
 *
 * `crypto.randomUUID()` joins 20 pieces with `+`, and V8 keeps the result as a tree of
 * concatenations: about 500 bytes per id, flattened again on first use as a map key. This writes
 * the 36 characters into a scratch buffer and makes one flat string of them, from the same source
 * of randomness (`randomFillSync`, drawn for 128 ids at a time, each byte used once).
 */
import { randomFillSync } from 'node:crypto';

const BYTES = 16;
const POOL_IDS = 128;
const pool = Buffer.alloc(BYTES * POOL_IDS);
let used = pool.length;
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

export function randomUuid(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used;
  used += BYTES;
  let out = 0;
  for (let i = 0; i < BYTES; i++) {
    let byte = pool[at + i]!;
    if (i === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // RFC 4122 variant
    if (i === 4 || i === 6 || i === 8 || i === 10) text[out++] = 0x2d; // '-'
    text[out++] = HEX[byte >> 4]!;
    text[out++] = HEX[byte & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}
