/**
 * The access tokens' key set over time (access-tokens.ts, SPEC §17): a rotated key is fetched for
 * the first token that uses it; unknown `kid`s fetch at most once per cooldown, answered or not;
 * a host that is down leaves the keys in hand working and shows in `status()`. A small key set
 * host on 127.0.0.1 and an injected clock; no waiting.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { recordingLogger } from '@mdp/test-kit';
import { createAccessTokens, type AccessTokens } from '../src/access-tokens.js';
import { KeyHost, signingKey, type SigningKey } from './oidc.js';

const ISSUER = 'https://idp.example';
const AUDIENCE = 'https://mdp.example';

describe('key sets', () => {
  let host: KeyHost;
  let a: SigningKey;
  let b: SigningKey;
  let clock: number;
  let tokens: AccessTokens;
  const log = recordingLogger({ level: 'info' });
  let serial = 0;

  const sign = (key: SigningKey) =>
    new SignJWT({ scope: 'mdp:read', jti: String(serial++) })
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('alice')
      .setIssuedAt(Math.floor(clock / 1000))
      .setExpirationTime(Math.floor(clock / 1000) + 600)
      .sign(key.privateKey);
  const check = async (token: string): Promise<boolean> => {
    await tokens.prepare(token);
    return tokens.verified(token) !== undefined;
  };

  beforeEach(async () => {
    a = await signingKey('key-a');
    b = await signingKey('key-b', 'ES256');
    host = new KeyHost();
    host.keys = [a.publicJwk];
    await host.start();
    clock = Date.now();
    tokens = createAccessTokens({
      issuer: ISSUER,
      jwksUrl: host.jwksUrl,
      audiences: () => [AUDIENCE],
      cooldownMs: 30_000,
      refreshIntervalMs: 600_000,
      logger: log.logger,
      now: () => clock,
    });
    await tokens.start();
  });

  afterEach(async () => {
    tokens.close();
    await host.stop();
  });

  it('uses a rotated key without a restart, fetching the set once for it', async () => {
    expect(tokens.status()).toMatchObject({ state: 'ok', fetches: 1, failures: 0 });
    expect(await check(await sign(a))).toBe(true);
    expect(host.requests).toBe(1);
    host.keys = [b.publicJwk];
    clock += 30_000;
    expect(await check(await sign(b))).toBe(true);
    expect(host.requests).toBe(2);
    // Key A left the set: a new token signed with it is refused (its kid is now the unknown one).
    expect(await check(await sign(a))).toBe(false);
  });

  it('fetches for unknown kids at most once per cooldown, and refuses them', async () => {
    const stranger = await signingKey('stranger');
    const fetchesBefore = host.requests;
    clock += 30_000;
    const first = await Promise.all([sign(stranger), sign(stranger), sign(stranger)].map(async (token) => check(await token)));
    expect(first).toEqual([false, false, false]);
    expect(host.requests).toBe(fetchesBefore + 1);
    for (let i = 0; i < 5; i++) expect(await check(await sign(stranger))).toBe(false);
    expect(host.requests).toBe(fetchesBefore + 1);
    clock += 30_000;
    expect(await check(await sign(stranger))).toBe(false);
    expect(host.requests).toBe(fetchesBefore + 2);
  });

  it('keeps the keys in hand while the host is down, rate-limits the failures, and recovers', async () => {
    await host.stop();
    clock += 30_000;
    // An unknown kid tries the host once; it is down.
    expect(await check(await sign(b))).toBe(false);
    expect(tokens.status()).toMatchObject({ state: 'stale', failures: 1 });
    expect(tokens.status().error).toBeDefined();
    expect(await log.seen('auth.key_set_unreachable')).toMatchObject({ level: 'warn', cachedKeys: true });
    // A token signed with a key in hand still verifies; unknown ones do not try again within the cooldown.
    expect(await check(await sign(a))).toBe(true);
    expect(await check(await sign(b))).toBe(false);
    expect(tokens.status().fetches).toBe(2);
    // The host comes back with the new key.
    host.keys = [a.publicJwk, b.publicJwk];
    await host.start();
    clock += 30_000;
    const recovered = log.next('auth.key_set_recovered');
    expect(await check(await sign(b))).toBe(true);
    await recovered;
    expect(tokens.status()).toMatchObject({ state: 'ok', error: undefined });
  });

  it('is unavailable until a first set is fetched, and refuses tokens then', async () => {
    await host.stop();
    const cold = createAccessTokens({ issuer: ISSUER, jwksUrl: host.jwksUrl, audiences: () => [AUDIENCE], logger: log.logger, now: () => clock });
    await cold.start();
    expect(cold.status()).toMatchObject({ state: 'unavailable', fetchedAt: undefined, failures: 1 });
    const token = await sign(a);
    await cold.prepare(token);
    expect(cold.verified(token)).toBeUndefined();
    cold.close();
  });
});
