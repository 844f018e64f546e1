/**
 * The keys of the `mdp_auth` cookie, kept with the per-user state (`<state dir>/cookie-keys`, next
 * to the cluster secret, mode 0600), so that a cookie outlives the server that issued it and every
 * server reading the same file (the members of one user's cluster) accepts it.
 *
 * The file is JSON: `{"version": 1, "keys": [{"key", "created"}, {"key", "created", "retired"}, …]}`,
 * each key 32 random bytes in base64url. The first seals new cookies; the others are retired keys,
 * which still open cookies for one cookie lifetime after `retired` (by then every cookie they sealed
 * has expired). Rotation (`mdp-server rotate-cookie-key`) puts a new key first, retires the one
 * before and drops keys whose lifetime is over, replacing the file in one rename.
 *
 * A running server looks at the file again (one stat, read only when it changed) before sealing a
 * cookie, on a cookie naming a key it does not hold, and otherwise at most once a second when it
 * opens a cookie: members take a rotation without a restart. A file deleted is made anew, with a
 * new key: every cookie issued before is refused from then on. A file it cannot use keeps the keys
 * it has, and is reported once (`auth.cookie_keys_unusable`).
 */
import { randomBytes } from 'node:crypto';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { AUTH_COOKIE_MAX_AGE_MS, cookieKeyOf, systemClock, type CookieKey, type CookieKeyring, type Logger } from '@mdp/core';
import { createPrivateFile, fileVersion, privateDirectory, readPrivateFile, reason, replacePrivateFile } from './private-file.js';

/** Name of the keys' file in the state directory. */
export const COOKIE_KEYS_FILE = 'cookie-keys';

/** Most keys a file holds: the sealing one and the retired ones still in their lifetime. */
export const MAX_COOKIE_KEYS = 16;

/** How often, at most, a server looks at the file when opening cookies of keys it holds, ms. */
export const COOKIE_KEYS_RECHECK_MS = 1000;

export function cookieKeysFile(stateDir: string): string {
  return join(stateDir, COOKIE_KEYS_FILE);
}

/**
 * Why the keys' file could not be used. `unstorable`: there is no file and none could be written
 * (no writable state directory); `unfit`: the file, or its directory, must not be trusted or cannot
 * be read as keys, and someone has to look at it.
 */
export class CookieKeysError extends Error {
  constructor(
    message: string,
    readonly kind: 'unstorable' | 'unfit',
  ) {
    super(message);
    this.name = 'CookieKeysError';
  }
}

const timestamp = v.pipe(
  v.string(),
  v.check((text) => Number.isFinite(Date.parse(text)), 'must be an ISO date'),
);
const material = v.pipe(
  v.string(),
  v.check((text) => /^[A-Za-z0-9_-]{43}$/.test(text), 'must be 32 bytes in base64url (43 characters)'),
);
const StoredKeySchema = v.object({ key: material, created: timestamp, retired: v.optional(timestamp) });
const CookieKeysSchema = v.pipe(
  v.object({ version: v.literal(1), keys: v.pipe(v.array(StoredKeySchema), v.minLength(1), v.maxLength(MAX_COOKIE_KEYS)) }),
  v.check((doc) => doc.keys[0]?.retired === undefined, 'keys[0] seals new cookies and must not be retired'),
  v.check((doc) => doc.keys.slice(1).every((k) => k.retired !== undefined), 'every key after the first must be retired'),
);

export type CookieKeysDocument = v.InferOutput<typeof CookieKeysSchema>;

/** The document in `text`, or what is wrong with it. */
export function parseCookieKeys(text: string): { ok: true; value: CookieKeysDocument } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, error: 'it is not JSON' };
  }
  const parsed = v.safeParse(CookieKeysSchema, json);
  if (parsed.success) return { ok: true, value: parsed.output };
  const issue = parsed.issues[0];
  const path = v.getDotPath(issue);
  return { ok: false, error: `${path ? `${path} ` : ''}${issue.message}` };
}

export function serializeCookieKeys(doc: CookieKeysDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** A document with one new key. */
export function newCookieKeys(now: number, fresh: Buffer = randomBytes(32)): CookieKeysDocument {
  return { version: 1, keys: [{ key: fresh.toString('base64url'), created: new Date(now).toISOString() }] };
}

/**
 * `doc` rotated at `now`: `fresh` seals, the key that sealed is retired at `now`, keys retired
 * `maxAgeMs` or more ago are dropped, and at most {@link MAX_COOKIE_KEYS} are kept (the oldest go).
 */
export function rotatedCookieKeys(
  doc: CookieKeysDocument,
  now: number,
  fresh: Buffer = randomBytes(32),
  maxAgeMs = AUTH_COOKIE_MAX_AGE_MS,
): CookieKeysDocument {
  const stamp = new Date(now).toISOString();
  const [sealing, ...retired] = doc.keys;
  const live = [...(sealing ? [{ ...sealing, retired: stamp }] : []), ...retired].filter((k) => now < Date.parse(k.retired ?? stamp) + maxAgeMs);
  return { version: 1, keys: [{ key: fresh.toString('base64url'), created: stamp }, ...live].slice(0, MAX_COOKIE_KEYS) };
}

/** The keys of a document, the sealing one first. */
export function cookieKeysOf(doc: CookieKeysDocument): CookieKey[] {
  return doc.keys.map((k) => cookieKeyOf(Buffer.from(k.key, 'base64url'), k.retired === undefined ? undefined : Date.parse(k.retired)));
}

/** What to tell a user whose file cannot be used. */
const ADVICE = {
  unfit: 'delete it to make a new key (every mdp_auth cookie issued before is then refused), or give --cluster-state-dir a private directory',
  unstorable: 'give --cluster-state-dir a writable private directory',
} as const;

function problemOf(file: string): (what: string, kind?: 'unstorable') => CookieKeysError {
  return (what, kind) => new CookieKeysError(`cookie keys ${file}: ${what}; ${ADVICE[kind ?? 'unfit']}`, kind ?? 'unfit');
}

/** The document in `file`; undefined when there is none. Throws CookieKeysError. */
function readCookieKeys(file: string): CookieKeysDocument | undefined {
  const problem = problemOf(file);
  const text = readPrivateFile(file, problem);
  if (text === undefined) return undefined;
  const parsed = parseCookieKeys(text);
  if (!parsed.ok) throw problem(`it does not hold cookie keys (${parsed.error})`);
  return parsed.value;
}

/**
 * The keys in `file`, made first (one new key) if there is none; several servers starting at once
 * all end up with the keys of the first that made it. Throws CookieKeysError.
 */
export function loadOrCreateCookieKeys(file: string, now: number = systemClock.wallNow()): CookieKeysDocument {
  const problem = problemOf(file);
  privateDirectory(file, problem);
  const existing = readCookieKeys(file);
  if (existing !== undefined) return existing;
  const made = newCookieKeys(now);
  if (createPrivateFile(file, serializeCookieKeys(made), problem)) return made;
  const winner = readCookieKeys(file);
  if (winner === undefined) throw problem('it vanished while it was made');
  return winner;
}

export interface Rotation {
  readonly document: CookieKeysDocument;
  /** Until when cookies sealed before the rotation are still accepted, ms since the epoch. */
  readonly oldKeysUntil: number;
}

/**
 * Rotate the keys in `file` and replace it in one rename (when there is none, make it). One
 * rotation at a time: while one holds `<file>.lock`, another is refused (two at once would each
 * retire the same key, and the second would drop the first's new key). Throws CookieKeysError.
 */
export function rotateCookieKeyFile(file: string, now: number = systemClock.wallNow()): Rotation {
  const problem = problemOf(file);
  privateDirectory(file, problem);
  const lock = `${file}.lock`;
  try {
    writeFileSync(lock, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new CookieKeysError(`cookie keys ${file}: another rotation is under way (if none is, one was interrupted: remove ${lock})`, 'unfit');
    }
    throw problem(`cannot lock it: ${reason(error)}`, 'unstorable');
  }
  try {
    // No file yet: its first key is all a rotation needs (a server that makes one meanwhile wins,
    // and that one is rotated).
    const existing = readCookieKeys(file);
    if (existing === undefined) {
      const made = newCookieKeys(now);
      if (createPrivateFile(file, serializeCookieKeys(made), problem)) return { document: made, oldKeysUntil: now };
    }
    const rotated = rotatedCookieKeys(existing ?? loadOrCreateCookieKeys(file, now), now);
    replacePrivateFile(file, serializeCookieKeys(rotated), problem);
    return { document: rotated, oldKeysUntil: now + AUTH_COOKIE_MAX_AGE_MS };
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      // Removed by hand meanwhile: nothing left to release.
    }
  }
}

export interface FileKeyringOptions {
  /** Milliseconds since the epoch; default the system clock's `wallNow`. */
  readonly now?: () => number;
  /** Most time between two looks at the file when opening cookies of known keys, ms. Default 1000. */
  readonly recheckMs?: number;
  readonly logger: Logger;
}

/**
 * A ring backed by `file`, read (or made) now: throws CookieKeysError when it cannot be. Later
 * changes of the file are taken as described at the top; a file it cannot use later keeps the keys
 * it has.
 */
export function fileKeyring(file: string, options: FileKeyringOptions): CookieKeyring {
  const now = options.now ?? systemClock.wallNow;
  const recheckMs = options.recheckMs ?? COOKIE_KEYS_RECHECK_MS;
  const { logger } = options;
  // The version before reading: a change made meanwhile is read at the next look.
  let version = fileVersion(file) ?? 'missing';
  let keys = cookieKeysOf(loadOrCreateCookieKeys(file, now()));
  let byId = new Map(keys.map((k) => [k.id, k]));
  let checkedAt = now();
  /** The version of the file last found unusable (reported once, tried again when it changes). */
  let refused: string | undefined;

  const look = (always: boolean): void => {
    const at = now();
    if (!always && at - checkedAt < recheckMs) return;
    checkedAt = at;
    const current = fileVersion(file) ?? 'missing';
    if (current === version || current === refused) return;
    try {
      const next = cookieKeysOf(loadOrCreateCookieKeys(file, at));
      version = current;
      refused = undefined;
      if (sameKeys(next, keys)) return;
      keys = next;
      byId = new Map(keys.map((k) => [k.id, k]));
      // A new sealing key is a rotation, or (when the file was missing) every earlier cookie revoked.
      logger.info('auth.cookie_keys_loaded', { file, sealing: keys[0]?.id, keys: keys.length, made: current === 'missing' });
    } catch (error) {
      refused = current;
      logger.warn('auth.cookie_keys_unusable', { file, error: (error as Error).message, kept: keys.length });
    }
  };

  return {
    sealing() {
      look(true);
      return keys[0] as CookieKey;
    },
    find(id) {
      look(false);
      if (!byId.has(id)) look(true);
      return byId.get(id);
    },
  };
}

function sameKeys(a: readonly CookieKey[], b: readonly CookieKey[]): boolean {
  return a.length === b.length && a.every((k, i) => k.id === b[i]?.id && k.retiredAt === b[i]?.retiredAt);
}
