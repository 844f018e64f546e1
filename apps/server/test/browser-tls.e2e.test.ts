/**
 * Real browser, another site, over TLS (SPEC §14): headless Chromium loads a page from
 * `https://localhost:A` that uses an MDP server at `https://127.0.0.1:B` (another site: sites
 * compare host names, not ports), both serving certificates from the test's CA.
 *
 * Chromium trusts those certificates through `--ignore-certificate-errors-spki-list` with their
 * public-key hashes: a certificate on that list counts as valid, so the pages are secure contexts
 * and cookies behave as they would under a real CA, while every other certificate is still checked.
 * (Playwright's `ignoreHTTPSErrors` would accept any certificate at all; adding the CA to the
 * system's store would touch the machine.) `--host-resolver-rules` sends localhost to 127.0.0.1,
 * where the page server listens, whatever else localhost resolves to.
 *
 * What the tests show, as Chromium behaves: with its default settings it refuses the
 * `SameSite=None; Secure` cookie of the cross-site bootstrap as a third-party cookie (reason
 * `UserPreferences`), so (a) the websocket client registers without it; (b) where the user allows
 * third-party cookies, the cookie bootstrap works across sites and needs `SameSite=None` to; (c)
 * what works without the cookie, also under an auth policy: the HTTP loop with an `Authorization`
 * header; (d) why the listener asks for client certificates only on request.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Inbox, descriptor, skill, stopAll } from '@mdp/test-kit';
import { clientChange, startServer, type TestServer } from './harness.js';
import {
  WAIT_MS,
  callPage,
  chromiumAvailable,
  launchChromium,
  launchChromiumProfile,
  loadTestPage,
  startPageServer,
  within,
  type PageServer,
} from './browser/page-server.js';
import { createPki, spkiHash, type Issued, type TestCa, type TestPki } from './pki.js';

const BROWSER_AUTH = { scheme: 'Bearer', token: 'browser-token' };

/** A cookie Chromium refused to store, and why (from the DevTools protocol). */
interface Refused {
  readonly name: string;
  readonly reasons: readonly string[];
  readonly line: string;
}

/**
 * Collect the cookies Chromium refuses on the page's responses. DevTools may report a refusal after
 * the page's fetch has resolved, so tests wait for it in the inbox.
 */
async function refusedCookies(context: BrowserContext, page: Page): Promise<Inbox<Refused>> {
  const refused = new Inbox<Refused>();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.responseReceivedExtraInfo', (event) => {
    for (const blocked of event.blockedCookies) {
      refused.push({ name: blocked.cookie?.name ?? '?', reasons: blocked.blockedReasons, line: blocked.cookieLine });
    }
  });
  return refused;
}

describe.skipIf(!chromiumAvailable())('real browser (headless Chromium) on another site, over TLS', () => {
  let pki: TestPki;
  let ca: TestCa;
  let mdpCert: Issued;
  let trust: string[];
  let browser: Browser;
  let pageServer: PageServer;
  let context: BrowserContext | undefined;
  let profile: string | undefined;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    pki = createPki();
    ca = pki.ca('browser');
    mdpCert = ca.issue('mdp-server');
    const pageCert = ca.issue('page-server');
    trust = [`--ignore-certificate-errors-spki-list=${spkiHash(mdpCert.cert)},${spkiHash(pageCert.cert)}`, '--host-resolver-rules=MAP localhost 127.0.0.1'];
    [browser, pageServer] = await Promise.all([launchChromium(trust), startPageServer({ key: readFileSync(pageCert.keyFile), cert: pageCert.cert })]);
  }, 20_000);

  afterAll(async () => {
    await browser?.close();
    await pageServer?.close();
    pki?.remove();
  });

  afterEach(async () => {
    await context?.close();
    context = undefined;
    if (profile) rmSync(profile, { recursive: true, force: true });
    profile = undefined;
    await stopAll();
  });

  /** The test page in `ctx` (default: a fresh context of the shared browser), from the page server's site. */
  async function openPage(ctx?: BrowserContext): Promise<{ page: Page; refused: Inbox<Refused> }> {
    context = ctx ?? (await browser.newContext());
    const page = await context.newPage();
    const refused = await refusedCookies(context, page);
    pageErrors = [];
    await loadTestPage(page, pageServer.origin, pageErrors);
    expect(new URL(page.url()).origin).toMatch(/^https:\/\/localhost:\d+$/);
    return { page, refused };
  }

  /** Open a websocket client in the page and wait until `t` lists it. */
  async function pageClient(page: Page, t: TestServer, id: string, auth?: unknown): Promise<void> {
    const listed = clientChange(t.server, id, true);
    await callPage(page, 'openWebSocketClient', t.ws, descriptor(id, [skill(`/${id}/skill.md`)]), auth);
    await within(listed, `${id} to be listed`);
  }

  /** A skill read through `t`, bounded in time: the token the page's client saw, from its answer. */
  async function readToken(t: TestServer, id: string, headers: Record<string, string> = {}): Promise<string | undefined> {
    const res = await t.fetch(`${t.http}/skills/${id}/${id}`, { headers, signal: AbortSignal.timeout(WAIT_MS) });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(`origin: ${pageServer.origin}`);
    return /^token: (.*)$/m.exec(text)?.[1];
  }

  it('(a) by default Chromium refuses the SameSite=None cookie as a third-party cookie: the websocket client registers without it', async () => {
    const t = await startServer({ tls: ca.tls(mdpCert), cookieSameSite: 'none', heartbeatIntervalMs: 100 });
    expect(t.http).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const { page, refused } = await openPage();

    // The bootstrap itself succeeds (a credentialed, preflighted cross-site POST over TLS) …
    expect(await callPage(page, 'bootstrapCookie', t.http, BROWSER_AUTH)).toEqual({ status: 204, cacheControl: 'no-store', body: '', documentCookie: '' });
    // … and the server sends SameSite=None; Secure, but Chromium's third-party cookie blocking keeps it out.
    expect(await refused.count(1)).toEqual([
      { name: 'mdp_auth', reasons: ['UserPreferences'], line: expect.stringMatching(/; HttpOnly; SameSite=None; Secure$/) },
    ]);
    expect(await context!.cookies(t.http)).toEqual([]);

    // The websocket client registers (over wss) with no transport auth, and reads reach it.
    await pageClient(page, t, 'no-cookie');
    expect(t.server.router.getClient('no-cookie')).toMatchObject({ transportKind: 'ws', secure: true, authSource: 'none' });
    expect(await readToken(t, 'no-cookie')).toBe('none');
    // Without an auth policy, a page can name its credential in registerClient instead.
    await pageClient(page, t, 'message-auth', BROWSER_AUTH);
    expect(t.server.router.getClient('message-auth')).toMatchObject({ secure: true, authSource: 'message' });
    await page.waitForFunction('window.mdpPage.wsState().pongs >= 2');
    expect((await callPage(page, 'wsState')).closed).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 20_000);

  it('(b) where the user allows third-party cookies, the cookie bootstrap works across sites, and only with SameSite=None', async () => {
    profile = mkdtempSync(join(tmpdir(), 'mdp-chromium-'));
    // Chromium's "allow third-party cookies" setting (cookie_controls_mode 0), in a profile of its own.
    const { page, refused } = await openPage(await launchChromiumProfile(profile, { profile: { cookie_controls_mode: 0 } }, trust));

    const lax = await startServer({ tls: ca.tls(mdpCert) });
    expect(await callPage(page, 'bootstrapCookie', lax.http, BROWSER_AUTH)).toMatchObject({ status: 204 });
    // SameSite=Lax keeps a cookie out of a cross-site request (Chromium 156 says `SchemefulSameSiteLax`).
    expect((await refused.count(1)).map((r) => [r.name, r.reasons])).toEqual([['mdp_auth', [expect.stringMatching(/SameSiteLax$/)]]]);
    expect(await context!.cookies(lax.http)).toEqual([]);

    const t = await startServer({ tls: ca.tls(mdpCert), cookieSameSite: 'none' });
    expect(await callPage(page, 'bootstrapCookie', t.http, BROWSER_AUTH)).toMatchObject({ status: 204 });
    expect(refused.items).toHaveLength(1);
    const cookies = await context!.cookies(t.http);
    expect(cookies).toMatchObject([{ name: 'mdp_auth', domain: '127.0.0.1', path: '/', httpOnly: true, secure: true, sameSite: 'None' }]);

    // The browser sends it on the wss upgrade: the client is registered with the cookie's auth …
    await pageClient(page, t, 'with-cookie');
    expect(t.server.router.getClient('with-cookie')).toMatchObject({ secure: true, authSource: 'transport' });
    // … and on the page's own credentialed skill read, whose auth reaches the client.
    const fromPage = await callPage(page, 'readSkill', `${t.http}/skills/with-cookie/with-cookie`);
    expect(fromPage).toMatchObject({ status: 200, text: expect.stringContaining('token: browser-token') });
    expect(await readToken(t, 'with-cookie')).toBe('none'); // a read from node carries the reader's auth
    expect(pageErrors).toEqual([]);
  }, 20_000);

  it('(c) without the cookie, under a token policy: the websocket is refused (4401); the HTTP loop with an Authorization header works', async () => {
    const t = await startServer({ tls: ca.tls(mdpCert), cookieSameSite: 'none', authTokens: ['page-token'] });
    const { page } = await openPage();

    await callPage(page, 'openWebSocketClient', t.ws, descriptor('refused', [skill('/refused/skill.md')]), { token: 'page-token' });
    await page.waitForFunction('window.mdpPage.wsState().closed.length === 1');
    expect((await callPage(page, 'wsState')).closed).toEqual([{ clientId: 'refused', code: 4401, reason: 'Unauthorized' }]);

    // The page sets the header itself on every loop call (CORS lets it): no cookie is involved.
    await callPage(page, 'useHeaders', { authorization: 'Bearer page-token' });
    const connected = await callPage(page, 'loopConnect', t.http);
    expect(connected.status).toBe(200);
    const listed = clientChange(t.server, 'loop-client', true);
    const loopDescriptor = descriptor('loop-client', [skill('/loop-client/skill.md')]);
    expect(await callPage(page, 'loopSend', t.http, connected.sessionId!, { type: 'registerClient', client: loopDescriptor })).toEqual({
      status: 202,
      body: '{"ok":true}',
    });
    await within(listed, 'loop-client to be listed');
    expect(t.server.router.getClient('loop-client')).toMatchObject({ transportKind: 'http-loop', secure: true, authSource: 'transport' });
    await callPage(page, 'startPolling', t.http, connected.sessionId!);
    // The reader's token opens the read but stays on the server: under a policy it is never forwarded.
    expect(await readToken(t, 'loop-client', { authorization: 'Bearer page-token' })).toBe('none');
    expect((await t.fetch(`${t.http}/skills/loop-client/loop-client`)).status).toBe(401);
    expect((await callPage(page, 'loopState'))?.error).toBeUndefined();
    expect(pageErrors).toEqual([]);
  }, 20_000);

  it('(d) why peer certificates are off by default: Chromium cancels a websocket whose first connection is asked for a client certificate', async () => {
    const t = await startServer({ tls: { ...ca.tls(mdpCert), peerCertificates: true } });
    const { page } = await openPage();
    const opened = callPage(page, 'openWebSocketClient', t.ws, descriptor('first', [skill('/first/skill.md')]));
    await expect(opened).rejects.toThrow(`websocket ${t.ws} failed`);
    expect((await callPage(page, 'wsState')).closed).toEqual([{ clientId: 'first', code: 1006, reason: '' }]);
    // A request first (Chromium answers the certificate request of a fetch with none, and remembers
    // that for the server), and the websocket opens.
    expect((await callPage(page, 'readSkill', `${t.http}/skills/nobody/x`)).status).toBe(404);
    await pageClient(page, t, 'after-fetch');
    expect(t.server.router.getClient('after-fetch')).toMatchObject({ secure: true });
  }, 20_000);
});
