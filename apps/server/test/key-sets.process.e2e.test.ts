/**
 * Key sets that change and fail, against the built `mdp-server` (SPEC §17, issue item 4): the
 * issuer rotates its key while the server runs; its host stops (the keys in hand keep working, and
 * /readyz and /metrics say the set is stale) and starts again (the server recovers by itself).
 */
import { afterAll, afterEach, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { freePorts, removeScratch, scratchDir } from '@mdp/test-kit';
import { killAll, logged, printed, spawnServer } from './processes.js';
import { KeyHost, signingKey, type SigningKey } from './oidc.js';

const AUDIENCE = 'https://mdp.example';
const METRICS_TOKEN = 'metrics-secret';
/** How long a process may take to start (and say so) on a loaded machine, ms. */
const STARTUP_MS = 30_000;

const host = new KeyHost();
afterEach(async () => {
  killAll();
  await host.stop();
});
afterAll(() => removeScratch());

it('takes a rotated key without a restart, and rides out the key set host going down and coming back', { timeout: 120_000 }, async () => {
  const a = await signingKey('key-a');
  const b = await signingKey('key-b', 'ES256');
  host.keys = [a.publicJwk];
  await host.start();
  const [port] = (await freePorts(1)) as [number];
  const proc = spawnServer({
    port,
    rangeStart: port,
    rangeSize: 1,
    stateDir: scratchDir('mdp-keys-state-'),
    clusterId: `keys-${port}`,
    extra: [
      ...['--cluster-mode', 'standalone', '--auth-issuer', host.url, '--auth-audience', AUDIENCE, '--metrics-token', METRICS_TOKEN],
      // The background refresh notices the host going and coming within a second; unknown kids refetch at once.
      ...['--auth-key-set-refresh-ms', '1000', '--auth-key-set-cooldown-ms', '0'],
    ],
  });
  await printed(proc, /listening on/, STARTUP_MS);
  await logged(proc, 'auth.issuer_discovered', {}, STARTUP_MS);

  let serial = 0;
  const sign = (key: SigningKey) =>
    new SignJWT({ scope: 'mdp:read', jti: String(serial++) })
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(host.url)
      .setAudience(AUDIENCE)
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(key.privateKey);
  const list = async (key: SigningKey) =>
    (await fetch(`http://127.0.0.1:${port}/mdp/clients`, { headers: { authorization: `Bearer ${await sign(key)}` } })).status;
  const probe = async (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const keySetState = async () => {
    const text = await (await probe('/metrics')).text();
    return /^mdp_auth_key_set_state\{state="(\w+)"\} 1$/m.exec(text)?.[1];
  };

  expect(await list(a)).toBe(200);
  expect(await keySetState()).toBe('ok');

  // The issuer rotates to key B: the first token signed with it makes the server fetch the set again.
  host.keys = [b.publicJwk];
  expect(await list(b)).toBe(200);

  // The host goes down: keys in hand keep working, unknown ones are 401 (never 500), readiness says stale.
  await host.stop();
  const from = proc.logs.length;
  await logged(proc, 'auth.key_set_unreachable', { cachedKeys: true }, 10_000, from);
  expect(await list(b)).toBe(200);
  expect(await list(await signingKey('stranger'))).toBe(401);
  const ready = await probe('/readyz');
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ ready: true, auth: { keySet: 'stale', keySetError: expect.any(String) } });
  expect(await keySetState()).toBe('stale');
  expect((await probe('/metrics').then((r) => r.text())).match(/^mdp_auth_key_set_fetch_failures_total (\d+)$/m)?.[1]).not.toBe('0');

  // It comes back, with both keys: the server recovers by itself.
  host.keys = [a.publicJwk, b.publicJwk];
  const back = proc.logs.length;
  await host.start();
  await logged(proc, 'auth.key_set_recovered', {}, 10_000, back);
  expect(await (await probe('/readyz')).json()).toMatchObject({ ready: true, auth: { keySet: 'ok' } });
  expect(await keySetState()).toBe('ok');
  expect(await list(a)).toBe(200);
});
