/**
 * Issue 36, findings 3 and 4, in a real browser: headless Chromium loads the test page from
 * `http://evil.example:<port>` and `http://app.example:<port>` (`--host-resolver-rules` sends both
 * names to the page server on 127.0.0.1), sites other than the MDP server's. With no auth policy:
 *
 *   - the evil page cannot take over `o1`, a local program's live id, over the websocket (4403)
 *     nor over the HTTP loop (403); `o1` keeps serving, and the agent's call still reaches it;
 *   - the evil page cannot read `o1`'s skills: no CORS grant, and the client is never called, also
 *     for an element's GET, which carries no Origin (refused by its Fetch Metadata);
 *   - a page still registers its own clients and reads their skills, and replaces its own id on a
 *     reload; another site's page can neither replace that id nor read it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { clientChange, startServer, type TestServer } from './harness.js';
import { callPage, chromiumAvailable, launchChromium, loadTestPage, startPageServer, within, type PageServer } from './browser/page-server.js';

describe.skipIf(!chromiumAvailable())('pages of other sites in a real browser (headless Chromium)', () => {
  let browser: Browser;
  let pageServer: PageServer;
  let context: BrowserContext | undefined;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    pageServer = await startPageServer();
    browser = await launchChromium(['--host-resolver-rules=MAP evil.example 127.0.0.1, MAP app.example 127.0.0.1']);
  }, 20_000);

  afterAll(async () => {
    await browser?.close();
    await pageServer?.close();
  });

  afterEach(async () => {
    await context?.close();
    context = undefined;
    await stopAll();
  });

  /** The test page, loaded from `site` (a name the browser resolves to the page server). */
  async function openPage(site: string): Promise<Page> {
    context = await browser.newContext();
    const page = await context.newPage();
    pageErrors = [];
    await loadTestPage(page, `http://${site}:${new URL(pageServer.origin).port}`, pageErrors);
    return page;
  }

  /** A local program (no Origin) holding `id` with one skill. */
  async function localClient(t: TestServer, id: string): Promise<TestClient> {
    const client = await TestClient.register(t.ws, descriptor(id, [skill('/s/skill.md')]));
    client.handler = () => 'from the local app';
    return client;
  }

  it("a page of another site can neither take over a local program's live id nor read its skill", async () => {
    const t = await startServer();
    const owner = await localClient(t, 'o1');
    const page = await openPage('evil.example');

    // Over the websocket: the page's socket is closed 4403, the owner stays.
    await callPage(page, 'openWebSocketClient', t.ws, descriptor('o1', [skill('/s/skill.md')]));
    await page.waitForFunction('window.mdpPage.wsState().closed.length >= 1');
    expect((await callPage(page, 'wsState')).closed).toEqual([{ clientId: 'o1', code: 4403, reason: 'Client id held by another principal' }]);
    expect(t.server.router.getClient('o1')).toMatchObject({ origin: undefined, principal: undefined });

    // Over the HTTP loop: 403 {error}.
    const { sessionId } = await callPage(page, 'loopConnect', t.http);
    const refused = await callPage(page, 'loopSend', t.http, sessionId!, { type: 'registerClient', client: descriptor('o1', [skill('/s/skill.md')]) });
    expect(refused).toEqual({ status: 403, body: JSON.stringify({ error: 'Client id held by another principal' }) });

    // The agent's next call still reaches the real o1, with nothing of it going to the page.
    const call = await fetch(`${t.http}/mdp/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'o1', method: 'GET', path: '/s/skill.md' }),
    });
    expect(await call.json()).toEqual({ ok: true, data: 'from the local app' });

    // Its skill: the browser gets no CORS grant, so the page's fetch fails, and the app is not called.
    await expect(callPage(page, 'readSkill', `${t.http}/skills/o1/s`)).rejects.toThrow(/CORS or network/);
    expect(owner.calls).toHaveLength(1); // the agent's call only
    expect(pageErrors).toEqual([]);
  }, 20_000);

  // Review finding: an element's GET carries no Origin, so a <script src> of the skill called the
  // local app, and its load event (error for a miss) told the page the app runs.
  it("a page of another site cannot have a local app's skill read by an element, nor learn from it that the app exists", async () => {
    const t = await startServer();
    const owner = await localClient(t, 'o2');
    const page = await openPage('evil.example');
    // A <script src>: its GET carries no Origin; `load` or `error` is all the page learns.
    const probe = (url: string): Promise<string> =>
      page.evaluate(`new Promise((resolve) => {
        const script = document.createElement('script');
        script.src = ${JSON.stringify(url)};
        script.onload = () => resolve('load');
        script.onerror = () => resolve('error');
        document.body.appendChild(script);
      })`);
    expect([await probe(`${t.http}/skills/o2/s`), await probe(`${t.http}/skills/nobody/s`)]).toEqual(['error', 'error']);
    expect(owner.calls).toHaveLength(0);
  }, 20_000);

  // Review finding: any site's page could register a skill of type text/html; a user who opened its
  // link ran its script as a page of the MDP server, which used the host API to call any client.
  it("a client's HTML skill opened in the browser runs no script, and not as the server's own page", async () => {
    const t = await startServer();
    const publisher = await TestClient.register(t.ws, descriptor('html-skill', [skill('/s/skill.md', { contentType: 'text/html' })]));
    publisher.handler = () => `<!doctype html><title>skill</title><script>document.title = 'ran as ' + self.origin;</script><p>text</p>`;
    context = await browser.newContext();
    const page = await context.newPage();
    const opened = await page.goto(`${t.http}/skills/html-skill/s`);
    expect(opened?.status()).toBe(200);
    expect(await page.title()).toBe('skill');
    expect(await page.evaluate('self.origin')).toBe('null');
    expect(await page.textContent('p')).toBe('text');
  }, 20_000);

  it('a page registers and reads its own clients, replaces its own id on a reload; another site cannot', async () => {
    const t = await startServer();
    const app = await openPage('app.example');
    const appOrigin = new URL(app.url()).origin;
    const listed = clientChange(t.server, 'app-page', true);
    await callPage(app, 'openWebSocketClient', t.ws, descriptor('app-page', [skill('/page/skill.md')]));
    await within(listed, 'app-page to be listed');
    expect(t.server.router.getClient('app-page')).toMatchObject({ origin: appOrigin, principal: `origin:${appOrigin}` });
    const own = await callPage(app, 'readSkill', `${t.http}/skills/app-page/page`);
    expect(own.status).toBe(200);
    expect(own.text).toContain(`origin: ${appOrigin}`);

    // A second socket of the same site (a reload) replaces it: the first is closed 4000.
    const before = t.server.router.getClient('app-page')?.sessionId;
    const replaced = clientChange(t.server, 'app-page', true);
    await callPage(app, 'openWebSocketClient', t.ws, descriptor('app-page', [skill('/page/skill.md')]));
    await app.waitForFunction('window.mdpPage.wsState().closed.length >= 1');
    await within(replaced, 'app-page to be listed again');
    expect((await callPage(app, 'wsState')).closed).toEqual([{ clientId: 'app-page', code: 4000, reason: 'Replaced by newer client session' }]);
    expect(t.server.router.getClient('app-page')?.sessionId).not.toBe(before);

    // Another site: no takeover, no read.
    const evil = await browser.newContext().then(async (ctx) => {
      const page = await ctx.newPage();
      await loadTestPage(page, `http://evil.example:${new URL(pageServer.origin).port}`, pageErrors);
      return { ctx, page };
    });
    try {
      await callPage(evil.page, 'openWebSocketClient', t.ws, descriptor('app-page', [skill('/page/skill.md')]));
      await evil.page.waitForFunction('window.mdpPage.wsState().closed.length >= 1');
      expect((await callPage(evil.page, 'wsState')).closed[0]).toMatchObject({ code: 4403 });
      await expect(callPage(evil.page, 'readSkill', `${t.http}/skills/app-page/page`)).rejects.toThrow(/CORS or network/);
      expect((await callPage(app, 'wsState')).calls).toHaveLength(1); // the app's own read only
    } finally {
      await evil.ctx.close();
    }
    expect(pageErrors).toEqual([]);
  }, 20_000);
});
