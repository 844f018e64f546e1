/**
 * The keys of the mdp_auth cookie in the per-user state (cookie-keys.ts): made once, private,
 * shared by every server reading the file, rotated with the old key kept for one cookie lifetime,
 * and refused (never trusted, never crashing) when the file is not fit to use. Clocks are injected.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AUTH_COOKIE_MAX_AGE_MS, createAuthGate, createTokenPolicy, type AuthGate } from '@mdp/core';
import { recordingLogger, removeScratch, scratchDir } from '@mdp/test-kit';
import { rotateCookieKeyMain } from '../src/cookie-key-command.js';
import {
  CookieKeysError,
  MAX_COOKIE_KEYS,
  cookieKeysFile,
  fileKeyring,
  loadOrCreateCookieKeys,
  newCookieKeys,
  parseCookieKeys,
  rotateCookieKeyFile,
  rotatedCookieKeys,
  serializeCookieKeys,
} from '../src/cookie-keys.js';
import { createMdpServer } from '../src/index.js';

afterEach(() => removeScratch());

const T0 = 1_800_000_000_000;
const HOUR = AUTH_COOKIE_MAX_AGE_MS;
const posix = process.platform !== 'win32';

/** A server's gate on the keys in `file`, at the time `clock()` says. */
function member(file: string, clock: () => number, logger = recordingLogger().logger): AuthGate {
  return createAuthGate(createTokenPolicy(['good']), { now: clock, cookieKeys: fileKeyring(file, { now: clock, logger }) });
}

/** Whether `gate` lets the cookie `value` in. */
const accepts = (gate: AuthGate, value: string): boolean => gate.allows(gate.extract({ cookie: `mdp_auth=${value}` }));

describe('the cookie keys file', () => {
  it('is made on first use, private (file 0600, new directory 0700), and read back the same', () => {
    const dir = join(scratchDir(), 'state', 'mdp-server');
    const file = cookieKeysFile(dir);
    const made = loadOrCreateCookieKeys(file, T0);
    expect(made).toEqual({ version: 1, keys: [{ key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), created: new Date(T0).toISOString() }] });
    expect(parseCookieKeys(readFileSync(file, 'utf8'))).toEqual({ ok: true, value: made });
    if (posix) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
    }
    expect(loadOrCreateCookieKeys(file, T0 + 1)).toEqual(made);
    expect(readdirSync(dir)).toEqual(['cookie-keys']);
    expect(loadOrCreateCookieKeys(cookieKeysFile(scratchDir())).keys[0]?.key).not.toBe(made.keys[0]?.key);
  });

  it('is the same for several servers starting at once', { timeout: 60_000 }, async () => {
    const file = cookieKeysFile(join(scratchDir(), 'state'));
    const module = fileURLToPath(new URL('../dist/cookie-keys.js', import.meta.url));
    const script = `import(${JSON.stringify(module)}).then((m) => process.stdout.write(m.loadOrCreateCookieKeys(${JSON.stringify(file)}).keys[0].key))`;
    const starts = Array.from({ length: 4 }, () => {
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      return new Promise<string>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`)))));
    });
    const keys = await Promise.all(starts);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toBe(loadOrCreateCookieKeys(file).keys[0]?.key);
    // No temporary file is left beside it.
    expect(readdirSync(join(file, '..'))).toEqual(['cookie-keys']);
  });

  it.each([
    ['not JSON', 'garbage', 'it does not hold cookie keys (it is not JSON)'],
    ['another version', JSON.stringify({ version: 2, keys: [] }), 'it does not hold cookie keys (version'],
    ['no key', JSON.stringify({ version: 1, keys: [] }), 'it does not hold cookie keys (keys '],
    ['a short key', JSON.stringify({ version: 1, keys: [{ key: 'abc', created: '2026-01-01T00:00:00Z' }] }), 'keys.0.key must be 32 bytes in base64url'],
    ['a bad date', JSON.stringify({ version: 1, keys: [{ key: 'a'.repeat(43), created: 'yesterday' }] }), 'keys.0.created must be an ISO date'],
    [
      'a retired sealing key',
      JSON.stringify({ version: 1, keys: [{ key: 'a'.repeat(43), created: '2026-01-01T00:00:00Z', retired: '2026-01-01T00:00:00Z' }] }),
      'keys[0] seals new cookies and must not be retired',
    ],
  ])('refuses a file that holds %s, saying what to do', (_what, text, message) => {
    const file = cookieKeysFile(scratchDir());
    writeFileSync(file, text, { mode: 0o600 });
    let error: unknown;
    try {
      loadOrCreateCookieKeys(file);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CookieKeysError);
    expect((error as CookieKeysError).kind).toBe('unfit');
    expect((error as Error).message).toContain(`cookie keys ${file}: `);
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).toMatch(
      /; delete it to make a new key \(every mdp_auth cookie issued before is then refused\), or give --cluster-state-dir a private directory$/,
    );
    // Never replaced by the server: the file is as it was.
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it.runIf(posix)('refuses a file others can read, a link planted in its place, a directory in its place, and a directory others can write', () => {
    const readable = cookieKeysFile(scratchDir());
    writeFileSync(readable, serializeCookieKeys(newCookieKeys(T0)), { mode: 0o644 });
    expect(() => loadOrCreateCookieKeys(readable)).toThrow(/others can read or change it \(mode 644\); chmod 600 it/);

    const linkedDir = scratchDir();
    writeFileSync(join(linkedDir, 'elsewhere'), serializeCookieKeys(newCookieKeys(T0)), { mode: 0o600 });
    symlinkSync(join(linkedDir, 'elsewhere'), cookieKeysFile(linkedDir));
    expect(() => loadOrCreateCookieKeys(cookieKeysFile(linkedDir))).toThrow(/cannot read it: ELOOP/);

    const dirInstead = cookieKeysFile(scratchDir());
    mkdirSync(dirInstead, { mode: 0o700 });
    expect(() => loadOrCreateCookieKeys(dirInstead)).toThrow(CookieKeysError);

    const shared = join(scratchDir(), 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(() => loadOrCreateCookieKeys(cookieKeysFile(shared))).toThrow(/writable by others \(mode 777\)/);
  });

  it('says there is no place to store one (a state directory that cannot be made) apart from a bad file', () => {
    const blocker = join(scratchDir(), 'a-file');
    writeFileSync(blocker, '');
    let error: unknown;
    try {
      loadOrCreateCookieKeys(cookieKeysFile(join(blocker, 'state')));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CookieKeysError);
    expect((error as CookieKeysError).kind).toBe('unstorable');
    expect((error as Error).message).toMatch(/cannot create .*: ENOTDIR; give --cluster-state-dir a writable private directory$/);
  });
});

describe('rotation', () => {
  it('puts a new key first, retires the one that sealed, drops keys past their lifetime and keeps at most 16', () => {
    const fresh = (n: number): Buffer => Buffer.alloc(32, n);
    let doc = newCookieKeys(T0, fresh(1));
    doc = rotatedCookieKeys(doc, T0 + 1000, fresh(2));
    expect(doc.keys.map((k) => [k.key, k.retired])).toEqual([
      [fresh(2).toString('base64url'), undefined],
      [fresh(1).toString('base64url'), new Date(T0 + 1000).toISOString()],
    ]);
    // An hour after key 1 was retired it is dropped at the next rotation.
    doc = rotatedCookieKeys(doc, T0 + 1000 + HOUR, fresh(3));
    expect(doc.keys.map((k) => k.key)).toEqual([fresh(3), fresh(2)].map((b) => b.toString('base64url')));
    for (let i = 0; i < 40; i++) doc = rotatedCookieKeys(doc, T0 + 2 * HOUR + i, fresh(10 + i));
    expect(doc.keys).toHaveLength(MAX_COOKIE_KEYS);
    expect(parseCookieKeys(serializeCookieKeys(doc))).toEqual({ ok: true, value: doc });
  });

  it('a cookie sealed before is accepted by every member for its lifetime, new ones use the new key, with no restart', () => {
    let clock = T0;
    const now = (): number => clock;
    const file = cookieKeysFile(scratchDir());
    const a = member(file, now);
    const b = member(file, now);
    const before = a.encodeCookie({ token: 'good' });
    expect(accepts(b, before)).toBe(true);

    clock += HOUR / 2;
    const { oldKeysUntil } = rotateCookieKeyFile(file, clock);
    expect(oldKeysUntil).toBe(clock + HOUR);
    // A seals with the new key at once; B, which has not looked at the file since, takes the
    // unknown key by looking again. Both still take the old cookie.
    const after = a.encodeCookie({ token: 'good' });
    expect(after.split('.')[0]).not.toBe(before.split('.')[0]);
    expect(accepts(b, after)).toBe(true);
    expect(accepts(a, before)).toBe(true);
    expect(accepts(b, before)).toBe(true);
    // B seals with the new key too.
    expect(b.encodeCookie({ token: 'good' }).split('.')[0]).toBe(after.split('.')[0]);

    // The old cookie's hour is over: refused everywhere; the new one lives on.
    clock = T0 + HOUR;
    expect(accepts(a, before)).toBe(false);
    expect(accepts(b, before)).toBe(false);
    expect(accepts(b, after)).toBe(true);
    // A restarted member (a new ring on the same file) takes the new cookie.
    expect(accepts(member(file, now), after)).toBe(true);
  });

  it('refuses a cookie sealed under a rotated-away key one lifetime after the rotation, whatever the cookie says', () => {
    let clock = T0;
    const now = (): number => clock;
    const file = cookieKeysFile(scratchDir());
    // A cookie sealed to live three hours (by a gate told so), so that only the retirement of its
    // key can end it on a member with the usual hour.
    const logger = recordingLogger().logger;
    const long = createAuthGate(createTokenPolicy(['good']), { now, cookieMaxAgeMs: 3 * HOUR, cookieKeys: fileKeyring(file, { now, logger }) });
    const sealed = long.encodeCookie({ token: 'good' });
    const other = member(file, now, logger);
    const rotatedAt = (clock += 1000);
    rotateCookieKeyFile(file, rotatedAt);
    clock = rotatedAt + HOUR - 1;
    expect(accepts(other, sealed)).toBe(true);
    clock = rotatedAt + HOUR;
    expect(accepts(other, sealed)).toBe(false);
    // Not for want of the key: the sealing member, which keeps it three hours, still opens it.
    expect(accepts(long, sealed)).toBe(true);
  });

  it('one at a time: a rotation under way (its lock held) refuses another', () => {
    const file = cookieKeysFile(scratchDir());
    loadOrCreateCookieKeys(file);
    writeFileSync(`${file}.lock`, '1\n');
    expect(() => rotateCookieKeyFile(file)).toThrow(
      `cookie keys ${file}: another rotation is under way (if none is, one was interrupted: remove ${file}.lock)`,
    );
    rmSync(`${file}.lock`);
    rotateCookieKeyFile(file);
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(readdirSync(join(file, '..'))).toEqual(['cookie-keys']);
  });

  it('a deleted file ends every earlier cookie: the next look makes a new key', () => {
    let clock = T0;
    const now = (): number => clock;
    const file = cookieKeysFile(scratchDir());
    const { logger, records } = recordingLogger();
    const gate = member(file, now, logger);
    const issued = gate.encodeCookie({ token: 'good' });
    rmSync(file);
    // Looked at within the second: not yet.
    expect(accepts(gate, issued)).toBe(true);
    clock += 1000;
    expect(accepts(gate, issued)).toBe(false);
    expect(existsSync(file)).toBe(true);
    expect(records.filter((r) => r.event === 'auth.cookie_keys_loaded')).toEqual([expect.objectContaining({ level: 'info', file, made: true, keys: 1 })]);
    expect(accepts(gate, gate.encodeCookie({ token: 'good' }))).toBe(true);
  });

  it('a file spoilt while servers run keeps the keys they have, is reported once, and is taken once mended', () => {
    let clock = T0;
    const now = (): number => clock;
    const file = cookieKeysFile(scratchDir());
    const { logger, records } = recordingLogger();
    const gate = member(file, now, logger);
    const issued = gate.encodeCookie({ token: 'good' });
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, '{"version": 1, "keys": [', { mode: 0o600 });
    for (let i = 0; i < 3; i++) {
      clock += 1000;
      expect(accepts(gate, issued)).toBe(true);
      expect(accepts(gate, gate.encodeCookie({ token: 'good' }))).toBe(true);
    }
    const reports = records.filter((r) => r.event === 'auth.cookie_keys_unusable');
    expect(reports).toEqual([
      expect.objectContaining({ level: 'warn', file, kept: 1, error: expect.stringContaining('it does not hold cookie keys (it is not JSON)') }),
    ]);
    // Mended (here: the good keys, rotated): taken at the next look.
    const goodKeys = parseCookieKeys(good);
    if (!goodKeys.ok) throw new Error(goodKeys.error);
    writeFileSync(file, serializeCookieKeys(rotatedCookieKeys(goodKeys.value, clock)));
    const mended = gate.encodeCookie({ token: 'good' });
    expect(mended.split('.')[0]).not.toBe(issued.split('.')[0]);
    expect(accepts(gate, issued)).toBe(true);
  });
});

describe('a server with cookieKeyFile', () => {
  it('under a policy makes the file and seals with it; without a policy never touches it', async () => {
    const dir = join(scratchDir(), 'state');
    createMdpServer({ port: 0, logLevel: 'silent', cookieKeyFile: cookieKeysFile(dir) });
    expect(existsSync(dir)).toBe(false);
    createMdpServer({ port: 0, logLevel: 'silent', authTokens: ['good'], cookieKeyFile: cookieKeysFile(dir) });
    expect(existsSync(cookieKeysFile(dir))).toBe(true);
  });

  it('stops before listening on a file it must not use, with what to do', () => {
    const file = cookieKeysFile(scratchDir());
    writeFileSync(file, 'garbage', { mode: 0o600 });
    expect(() => createMdpServer({ port: 0, logLevel: 'silent', authTokens: ['good'], cookieKeyFile: file })).toThrow(
      `cookie keys ${file}: it does not hold cookie keys (it is not JSON); delete it to make a new key`,
    );
  });

  it('without a place to store keys, warns and seals with a key of its own', () => {
    const blocker = join(scratchDir(), 'a-file');
    writeFileSync(blocker, '');
    const { logger, records } = recordingLogger();
    createMdpServer({ port: 0, logger, authTokens: ['good'], cookieKeyFile: cookieKeysFile(join(blocker, 'state')) });
    expect(records.filter((r) => r.event === 'auth.cookie_keys_unavailable')).toEqual([
      expect.objectContaining({ level: 'warn', error: expect.stringMatching(/ENOTDIR/), message: expect.stringContaining('they end when it stops') }),
    ]);
  });
});

describe('mdp-server rotate-cookie-key', () => {
  const run = (argv: string[], env: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = rotateCookieKeyMain(argv, env, { out: (t) => out.push(t), err: (t) => err.push(t) }, T0);
    return { code, out: out.join(''), err: err.join('') };
  };

  it('rotates the keys of the state directory the server settings name', () => {
    const dir = scratchDir();
    const first = loadOrCreateCookieKeys(cookieKeysFile(dir)).keys[0]?.key;
    const result = run(['--cluster-state-dir', dir]);
    expect(result).toEqual({
      code: 0,
      out: `mdp-server: rotated the mdp_auth cookie key in ${cookieKeysFile(dir)}: new cookies are sealed with the new key; cookies sealed before stay valid until ${new Date(T0 + HOUR).toISOString()} at the latest (1 retired key kept)\n`,
      err: '',
    });
    const keys = loadOrCreateCookieKeys(cookieKeysFile(dir)).keys;
    expect(keys[1]).toEqual(expect.objectContaining({ key: first, retired: new Date(T0).toISOString() }));
    // The environment names the directory as it does for the server; with no file yet, one is made.
    const other = scratchDir();
    expect(run([], { MDP_CLUSTER_STATE_DIR: other })).toEqual({
      code: 0,
      out: `mdp-server: made the mdp_auth cookie key in ${cookieKeysFile(other)} (there was none)\n`,
      err: '',
    });
    expect(loadOrCreateCookieKeys(cookieKeysFile(other)).keys).toHaveLength(1);
  });

  it('says what is wrong: a bad flag (64), a file it cannot use (1); --help', () => {
    expect(run(['--no-such-flag'])).toMatchObject({ code: 64, err: expect.stringContaining('--no-such-flag') });
    const dir = scratchDir();
    writeFileSync(cookieKeysFile(dir), 'garbage', { mode: 0o600 });
    expect(run(['--cluster-state-dir', dir])).toEqual({ code: 1, out: '', err: expect.stringMatching(/^mdp-server: cookie keys .*it is not JSON.*\n$/) });
    expect(readFileSync(cookieKeysFile(dir), 'utf8')).toBe('garbage');
    expect(run(['--help'])).toMatchObject({ code: 0, out: expect.stringContaining('Usage: mdp-server rotate-cookie-key [options]') });
  });
});
