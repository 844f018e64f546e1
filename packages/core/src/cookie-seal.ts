/**
 * The sealed `mdp_auth` cookie (SPEC §7 *beyond*): `{exp, auth}` encrypted and authenticated with
 * AES-256-GCM, so a forged or tampered cookie is refused, an expired one too, and whoever holds
 * it (other services on the same host, which browsers send it to as well) cannot read the token
 * in it. Keys come in a ring so that they can be rotated without ending every cookie at once:
 *
 *   seal ── the ring's sealing key ─▶ `<key id>.<base64url(iv | tag | ciphertext)>`
 *   open ── the key the id names ──▶ refused if unknown, or retired more than one cookie lifetime
 *                                    ago, or the tag fails, or `exp` has passed
 *
 * A retired key still opens cookies for one lifetime (the cookie's Max-Age) after it was retired:
 * every cookie it sealed before the rotation has expired by then.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { parseAuthContext, type AuthContext } from '@mdp/protocol';

/** Lifetime of a sealed cookie, ms: one hour, the cookie's Max-Age. */
export const AUTH_COOKIE_MAX_AGE_MS = 3_600_000;

/** One key of a ring. */
export interface CookieKey {
  /** Public name of the key (12 base64url characters), written before the sealed bytes. */
  readonly id: string;
  /** The AES-256-GCM key. Never log it. */
  readonly key: Buffer;
  /** When a newer key took over sealing, ms since the epoch; undefined while it seals. */
  readonly retiredAt?: number;
}

/**
 * Where a gate finds its keys. A ring backed by a file may look at the file again in either call
 * (a rotation made by another process); `find` is given the id of every cookie it opens.
 */
export interface CookieKeyring {
  /** The key new cookies are sealed with. */
  sealing(): CookieKey;
  /** The key named `id`, retired or not; undefined when the ring has none of that name. */
  find(id: string): CookieKey | undefined;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const ID_PATTERN = /^[A-Za-z0-9_-]{12}$/;
/** HKDF label: the cookie's key is kept apart from any other use of the same material. */
const KEY_LABEL = 'mdp_auth cookie sealing key v2';

/**
 * The cookie key made from `material` (a secret of at least 16 bytes: 32 random bytes from a key
 * file, or an auth policy's `cookieSecret`), by HKDF-SHA-256 under a label of our own.
 */
export function cookieKeyOf(material: Buffer, retiredAt?: number): CookieKey {
  if (material.length < 16) throw new RangeError(`a cookie key needs at least 16 bytes of material, got ${material.length}`);
  const key = Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), KEY_LABEL, 32));
  const id = createHash('sha256').update(key).digest().subarray(0, 9).toString('base64url');
  return retiredAt === undefined ? { id, key } : { id, key, retiredAt };
}

/** A ring that never changes: `keys[0]` seals, every key opens (retired ones for a lifetime). */
export function fixedKeyring(keys: readonly CookieKey[]): CookieKeyring {
  const first = keys[0];
  if (first === undefined) throw new RangeError('a cookie keyring needs at least one key');
  const byId = new Map(keys.map((k) => [k.id, k]));
  return { sealing: () => first, find: (id) => byId.get(id) };
}

/**
 * `<id>.<base64url(iv | tag | ciphertext)>` of `{exp, auth}` (exp: ms since the epoch), the id
 * authenticated with it. base64url and `.` need no quoting in a Cookie header.
 */
export function sealAuthCookie(auth: AuthContext, key: CookieKey, expiresAt: number): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(key.id, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify({ exp: expiresAt, auth }), 'utf8'), cipher.final()]);
  return `${key.id}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

/**
 * Open a sealed cookie; `undefined` when forged, tampered, sealed under a key the ring does not
 * hold, under a key retired `maxAgeMs` or more before `now`, expired at `now`, or not an AuthContext.
 */
export function openAuthCookie(value: string, ring: CookieKeyring, now: number, maxAgeMs: number = AUTH_COOKIE_MAX_AGE_MS): AuthContext | undefined {
  const dot = value.indexOf('.');
  const id = value.slice(0, dot);
  if (dot < 0 || !ID_PATTERN.test(id)) return undefined;
  const bytes = Buffer.from(value.slice(dot + 1), 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
  const key = ring.find(id);
  if (key === undefined || (key.retiredAt !== undefined && !(now < key.retiredAt + maxAgeMs))) return undefined;
  let text: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(id, 'utf8'));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
  let sealed: unknown;
  try {
    sealed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { exp, auth } = (typeof sealed === 'object' && sealed !== null ? sealed : {}) as { exp?: unknown; auth?: unknown };
  if (typeof exp !== 'number' || !(now < exp)) return undefined;
  const parsed = parseAuthContext(auth);
  return parsed.ok ? parsed.value : undefined;
}
