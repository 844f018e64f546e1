/**
 * The inspector in a real browser (headless Chromium via playwright-core, as browser.e2e.test.ts):
 * clients appear and disappear live, an endpoint is called with a JSON body, a skill is rendered as
 * Markdown in a sandbox, the page works under an auth policy, and it logs no console error.
 * A screenshot is saved to apps/server/test-output/inspector.png for a person to look at.
 * Skipped, with a warning, only when /usr/bin/chromium is missing.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { PathDescriptor } from '@mdp/protocol';
import { TestClient, descriptor, fakeClient, skill, stopAll } from '@mdp/test-kit';
import { CHROMIUM_PATH, chromiumAvailable, launchChromium } from './browser/page-server.js';
import { clientChange, registeredClient, startServer } from './harness.js';

const HAVE_CHROMIUM = chromiumAvailable();
if (!HAVE_CHROMIUM) console.warn(`[inspector.browser.e2e] SKIPPED: ${CHROMIUM_PATH} not found (apt-get install chromium).`);

/** Where the screenshots go (git-ignored). */
const OUTPUT_DIR = fileURLToPath(new URL('../test-output/', import.meta.url));
// A bound on each wait, not a measurement: a page of 100 clients on a loaded 2-core machine can
// take seconds to arrive and render.
const WAIT_MS = 15_000;

const echo: PathDescriptor = { type: 'endpoint', method: 'POST', path: '/echo', description: 'Echo the JSON body back' };

describe.skipIf(!HAVE_CHROMIUM)('inspector in headless Chromium', () => {
  let browser: Browser;
  let context: BrowserContext | undefined;
  let consoleErrors: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
  }, 20_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(async () => {
    await context?.close();
    context = undefined;
    await stopAll();
  });

  async function openInspector(http: string): Promise<Page> {
    context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
    const page = await context.newPage();
    consoleErrors = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${http}/mdp/inspector`);
    return page;
  }

  const clientItem = (id: string): string => `[data-client-id="${id}"]`;

  /** Wait until the element's whole text is `text`. */
  const textIs = (page: Page, selector: string, text: string): Promise<void> =>
    page.locator(selector, { hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).waitFor();

  it('shows clients as they come and go, calls an endpoint with a JSON body, renders a skill; no console errors', async () => {
    const t = await startServer();
    const page = await openInspector(t.http);
    await page.waitForSelector('#live[data-state="live"]');
    expect(await page.isVisible('#no-clients')).toBe(true);
    await page.locator('#cluster', { hasText: 'leader' }).waitFor();

    const client = await registeredClient(
      t,
      descriptor('shop', [echo, skill('/guide/skill.md', { description: 'How to use the shop' })], { name: 'Shop page' }),
    );
    client.handler = (call) => (call.path === '/echo' ? { echoed: call.body } : '# Shop guide\n\n- Call **/echo** with a JSON body.\n- Read `/guide`.\n');
    await page.waitForSelector(clientItem('shop'));
    expect(await page.textContent(`${clientItem('shop')} .client-head`)).toContain('Shop page');
    expect(await page.isHidden('#no-clients')).toBe(true);

    // Call the endpoint with a JSON body.
    await page.click(`${clientItem('shop')} button[data-path="/echo"]`);
    expect(await page.inputValue('#call-method')).toBe('POST');
    expect(await page.inputValue('#call-path')).toBe('/echo');
    await page.fill('#call-body', '{"quantity": 3, "item": "tea"}');
    await page.click('#call-button');
    await textIs(page, '#result-status', '200');
    expect(JSON.parse((await page.textContent('#result-json')) ?? '')).toEqual({ ok: true, data: { echoed: { quantity: 3, item: 'tea' } } });
    expect(await page.textContent('#result-time')).toMatch(/^\d+\.\d ms$/);
    expect(client.calls.at(-1)).toMatchObject({ method: 'POST', path: '/echo', body: { quantity: 3, item: 'tea' } });

    // A bad JSON body is refused in the page, without a call.
    await page.fill('#call-body', '{"quantity": ');
    await page.click('#call-button');
    await textIs(page, '#result-status', 'Body is not valid JSON');
    expect(client.calls).toHaveLength(1);

    // Read the skill: rendered as Markdown in the sandboxed frame.
    await page.click(`${clientItem('shop')} button[data-path="/guide/skill.md"]`);
    await page.click('#call-button');
    const frame = page.frameLocator('#result-markdown');
    await frame.locator('h1').waitFor();
    expect(await frame.locator('h1').textContent()).toBe('Shop guide');
    expect(await frame.locator('li strong').textContent()).toBe('/echo');
    expect(await page.getAttribute('#result-markdown', 'sandbox')).toBe('');

    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: `${OUTPUT_DIR}inspector.png`, fullPage: true });

    // Another client arrives, then the first leaves: the list follows without a reload.
    const second = await TestClient.connect(t.ws);
    second.send({ type: 'registerClient', client: descriptor('notes', [skill('/n/skill.md')]) });
    await page.waitForSelector(clientItem('notes'));
    const gone = clientChange(t.server, 'shop', false);
    await client.close();
    await gone;
    await page.waitForSelector(clientItem('shop'), { state: 'detached' });
    expect(await page.isVisible(clientItem('notes'))).toBe(true);
    expect(consoleErrors).toEqual([]);
  }, 30_000);

  it('shows a large catalog a page at a time: the first live, the next ones on request, read again after a change', async () => {
    const t = await startServer();
    // 100 clients of about 2 KB each fit one page (100 clients or 256 KiB of JSON, whichever comes first).
    const description = 'd'.repeat(2000);
    for (let i = 0; i < 230; i++) fakeClient(t.server.router, descriptor(`c${String(i).padStart(3, '0')}`, [skill('/s/skill.md')], { description }));
    const page = await openInspector(t.http);
    await page.waitForSelector(clientItem('c099'));
    expect(await page.locator('#clients > li').count()).toBe(100);
    await textIs(page, '#client-count', '(100+)');
    await page.click('#more-clients');
    await page.waitForSelector(clientItem('c199'));
    await page.click('#more-clients');
    await page.waitForSelector(clientItem('c229'));
    await textIs(page, '#client-count', '(230)');
    expect(await page.isHidden('#more-clients')).toBe(true);
    // A change sends a new first page; the pages asked for beyond it are read again.
    fakeClient(t.server.router, descriptor('a-first', [skill('/s/skill.md')]));
    await textIs(page, '#client-count', '(231)');
    expect(await page.locator('#clients > li').first().getAttribute('data-client-id')).toBe('a-first');
    expect(consoleErrors).toEqual([]);
  }, 30_000);

  it('under an auth policy asks for the token once and keeps it for the tab', async () => {
    const t = await startServer({ authTokens: ['inspector-token'] });
    const page = await openInspector(t.http);
    await page.waitForSelector('#token-form:not([hidden])');
    expect(await page.textContent('#live')).toBe('needs a token');

    await page.fill('#token', 'not-the-token');
    await page.click('#token-form button[type="submit"]');
    await textIs(page, '#token-error', 'The server refused this token.');

    await page.fill('#token', 'inspector-token');
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#live[data-state="live"]');
    const client = await registeredClient(t, descriptor('guarded', [echo]), { authorization: 'Bearer inspector-token' });
    client.handler = (call) => ({ echoed: call.body });
    await page.waitForSelector(clientItem('guarded'));
    await page.click(`${clientItem('guarded')} button[data-path="/echo"]`);
    await page.fill('#call-body', '{"a": 1}');
    await page.click('#call-button');
    await textIs(page, '#result-status', '200');
    // The call carried the tab's token (it got 200), which stays on the server: never forwarded under a policy.
    expect(client.calls.at(-1)?.body).toEqual({ a: 1 });
    expect(client.calls.at(-1)?.auth).toBeUndefined();

    // Kept for the tab: a reload does not ask again.
    await page.reload();
    await page.waitForSelector(clientItem('guarded'));
    expect(await page.isHidden('#token-form')).toBe(true);
    // Only the two refusals of the wrong and the missing token were logged by the browser.
    expect(consoleErrors.every((text) => text.includes('401'))).toBe(true);
  }, 30_000);

  it('renders untrusted Markdown inertly: its script does not run, in the frame or the page', async () => {
    const t = await startServer();
    const page = await openInspector(t.http);
    const client = await registeredClient(t, descriptor('evil', [skill('/x/skill.md')]));
    client.handler = () =>
      '# Title\n\n<script>parent.document.title = "owned"; window.top.owned = sessionStorage.length</script><img src=x onerror="parent.document.title=\'owned\'">';
    await page.waitForSelector(clientItem('evil'));
    await page.click(`${clientItem('evil')} button[data-path="/x/skill.md"]`);
    await page.click('#call-button');
    await page.frameLocator('#result-markdown').locator('h1').waitFor();
    expect(await page.title()).toBe('MDP inspector');
    expect(await page.evaluate('window.owned')).toBeUndefined();
    // What the browser reports is its refusal to run the frame's script, nothing else.
    expect(consoleErrors.length).toBeGreaterThan(0);
    for (const text of consoleErrors) expect(text).toMatch(/sandboxed|Content Security Policy|Failed to load resource/);
  }, 30_000);
});
