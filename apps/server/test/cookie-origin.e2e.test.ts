/**
 * The mdp_auth cookie counts only on requests of the server's own site's pages: no Origin, a
 * loopback origin, the server's own, or an `--allow-origin` one. A request a page of another site
 * makes is read as if it carried no cookie (under a policy: 401 / close 4401), and its CORS answer
 * grants that page no credentials, on every route kind: the HTTP loop, both skill routes, the
 * websocket upgrade, /mdp/auth and the host API. With `SameSite=Lax` (plain HTTP) and with
 * `--cookie-same-site none` (TLS), where browsers attach the cookie to other sites' requests too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import type { MdpServerOptions } from '../src/index.js';
import { clientChange, rawRequest, registeredClient, startServer, type TestServer } from './harness.js';
import { createPki, type Issued, type TestCa, type TestPki } from './pki.js';

const TOKEN = 'origin-token';
const ALLOWED = 'https://agent.example';
const LOOPBACK_PAGE = 'http://localhost:5173';
const FOREIGN = ['https://evil.example', 'null', 'https://agent.example:8443'];

let pki: TestPki;
let ca: TestCa;
let issued: Issued;

beforeAll(() => {
  pki = createPki();
  ca = pki.ca('cookie-origin');
  issued = ca.issue('mdp');
});
afterAll(() => pki.remove());
afterEach(stopAll);

interface Setup {
  readonly t: TestServer;
  /** The sealed cookie, as a Cookie header. */
  readonly cookie: string;
}

/** A guarded server with client `app` (skill `/docs/skill.md`, answering "doc") and a minted cookie. */
async function guarded(options: MdpServerOptions): Promise<Setup> {
  const t = await startServer({ authTokens: [TOKEN], allowedOrigins: [ALLOWED], cluster: { mode: 'standalone' }, ...options });
  const app = await registeredClient(t, descriptor('app', [skill('/docs/skill.md')]), { authorization: `Bearer ${TOKEN}` });
  app.handler = () => 'doc';
  const minted = await t.fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(minted.status).toBe(204);
  const value = /mdp_auth=([^;]+)/.exec(minted.headers.get('set-cookie') ?? '')?.[1];
  return { t, cookie: `mdp_auth=${value}` };
}

/** Whether a websocket upgrade with these headers registers (true) or is closed 4401 (false). */
async function websocketAdmits(t: TestServer, headers: Record<string, string>, id: string): Promise<boolean> {
  const client = await TestClient.connect(t.ws, { headers, ...(t.ca ? { ca: t.ca } : {}) });
  const listed = clientChange(t.server, id, true);
  client.send({ type: 'registerClient', client: descriptor(id, [skill('/s/skill.md')]) });
  const outcome = await Promise.race([
    listed.then(() => true),
    client.closed.then((closed) => (expect(closed).toEqual({ code: 4401, reason: 'Unauthorized' }), false)),
  ]);
  client.close();
  return outcome;
}

describe.each([
  ['SameSite=Lax over HTTP', (): MdpServerOptions => ({})],
  ['SameSite=None over TLS', (): MdpServerOptions => ({ tls: ca.tls(issued), cookieSameSite: 'none' })],
])('the cookie under a policy, %s', (_name, optionsOf) => {
  it("counts from the server's own site: no Origin, a loopback page, its own pages, an --allow-origin page", async () => {
    const { t, cookie } = await guarded(optionsOf());
    let n = 0;
    for (const origin of [undefined, LOOPBACK_PAGE, new URL(t.http).origin, ALLOWED]) {
      const headers: Record<string, string> = { cookie, ...(origin ? { origin } : {}) };
      const label = origin ?? 'no Origin';
      const connect = await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers });
      expect(connect.status, label).toBe(200);
      const { sessionId } = (await connect.json()) as { sessionId: string };
      expect((await t.fetch(`${t.http}/mdp/http-loop/poll?waitMs=0`, { headers: { ...headers, 'x-mdp-session-id': sessionId } })).status, label).toBe(204);
      for (const route of ['/skills/app/docs', '/app/skills/docs']) {
        const read = await t.fetch(`${t.http}${route}`, { headers });
        expect([read.status, await read.text()], `${label} ${route}`).toEqual([200, 'doc']);
        if (origin) expect(read.headers.get('access-control-allow-credentials'), label).toBe('true');
      }
      expect((await t.fetch(`${t.http}/mdp/clients`, { headers })).status, label).toBe(200);
      expect(await websocketAdmits(t, headers, `ok-${n++}`), label).toBe(true);
      const mint = await t.fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}` } });
      expect(mint.status, label).toBe(204);
    }
  });

  it('does not count from a page of another site on any route kind (SPEC §6 CORS stays: its requests get what a cookie-less one gets)', async () => {
    const { t, cookie } = await guarded(optionsOf());
    // A session the allowed page opened with the cookie: another site's page cannot poll it with it.
    const opened = (await (await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers: { cookie, origin: ALLOWED } })).json()) as {
      sessionId: string;
    };
    let n = 0;
    for (const origin of FOREIGN) {
      const headers = { cookie, origin };
      const connect = await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers });
      expect([connect.status, await connect.json()], origin).toEqual([401, { error: 'Unauthorized' }]);
      expect(connect.headers.get('access-control-allow-origin'), origin).toBe(origin);
      const poll = await t.fetch(`${t.http}/mdp/http-loop/poll?waitMs=0`, { headers: { ...headers, 'x-mdp-session-id': opened.sessionId } });
      expect(poll.status, origin).toBe(401);
      for (const route of ['/skills/app/docs', '/app/skills/docs']) {
        const read = await t.fetch(`${t.http}${route}`, { headers });
        expect(read.status, `${origin} ${route}`).toBe(401);
      }
      // The host API refuses other sites' pages outright (403), cookie or not.
      expect((await t.fetch(`${t.http}/mdp/clients`, { headers })).status, origin).toBe(403);
      expect(await websocketAdmits(t, headers, `refused-${n++}`), origin).toBe(false);
      const mint = await t.fetch(`${t.http}/mdp/auth`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}` } });
      expect(mint.status, origin).toBe(403);
      expect(mint.headers.get('set-cookie'), origin).toBeNull();
      const preflight = await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
      expect([preflight.status, preflight.headers.get('access-control-allow-origin')], origin).toEqual([204, origin]);
      // What the page shows itself still works: the HTTP loop with a token, no cookie needed.
      expect((await t.fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers: { origin, authorization: `Bearer ${TOKEN}` } })).status, origin).toBe(
        200,
      );
    }
    // Another site's <script> or <img> sends no Origin, only Fetch Metadata: the cookie does not
    // count there either (the host API then asks for a credential), while the user's own top-level
    // navigation from a link keeps it.
    // (Sent as given: the global fetch adds a Sec-Fetch-Mode of its own.)
    const clients = async (headers: Record<string, string>): Promise<number> =>
      t.ca
        ? (await t.fetch(`${t.http}/mdp/clients`, { headers })).status
        : (await rawRequest(t.http, '/mdp/clients', 'GET', Object.entries(headers).flat())).status;
    const element = { cookie, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'script' };
    expect(await clients(element)).toBe(401);
    expect(await clients({ ...element, 'sec-fetch-site': 'same-site' })).toBe(401);
    expect(await clients({ ...element, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' })).toBe(200);
    for (let i = 0; i < n; i++) expect(t.server.router.hasClient(`refused-${i}`)).toBe(false);
    // The cookie is as good as ever from the allowed page.
    expect((await t.fetch(`${t.http}/skills/app/docs`, { headers: { cookie, origin: ALLOWED } })).status).toBe(200);
  });
});

describe('the cookie without a policy', () => {
  it('from a page of another site is neither read nor forwarded to the client it reads', async () => {
    const t = await startServer({ cluster: { mode: 'standalone' } });
    const app = await registeredClient(t, descriptor('app', [skill('/docs/skill.md')]));
    app.handler = () => 'doc';
    const minted = await fetch(`${t.http}/mdp/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { token: 'user-secret' } }),
    });
    const cookie = `mdp_auth=${/mdp_auth=([^;]+)/.exec(minted.headers.get('set-cookie') ?? '')?.[1]}; theirs=1`;
    expect((await fetch(`${t.http}/skills/app/docs`, { headers: { cookie, origin: LOOPBACK_PAGE } })).status).toBe(200);
    // Another site's page may not read at all (its skill read is refused before the client).
    expect((await fetch(`${t.http}/skills/app/docs`, { headers: { cookie, origin: 'https://evil.example' } })).status).toBe(403);
    const [own, ...others] = app.calls as Array<{ auth?: { token?: string; headers?: Record<string, string> }; headers?: Record<string, string> }>;
    expect(own?.auth?.token).toBe('user-secret');
    expect(others).toEqual([]);
  });
});
