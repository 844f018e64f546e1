/**
 * Helpers for the real-browser test: a plain node:http server for the test page (its own port, so
 * the page is a different origin from the MDP server) and the headless Chromium launch.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** Debian's `chromium` package; `.ci/run` installs it. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-quic',
  '--disable-sync',
];

export const PAGE_TITLE = 'MDP browser client';

/** Bound on every single wait in the browser tests, ms. */
export const WAIT_MS = 4000;

/** Reject with a message naming what did not happen when `promise` takes longer than `ms`. */
export function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs], timeout: 15_000 });
}

/**
 * Chromium on a profile of its own in `userDataDir` (a regular profile, not the off-the-record
 * context `launchChromium` gives), with `preferences` written as its settings first.
 */
export async function launchChromiumProfile(
  userDataDir: string,
  preferences: Record<string, unknown>,
  extraArgs: readonly string[] = [],
): Promise<BrowserContext> {
  const { chromium } = await import('playwright-core');
  mkdirSync(join(userDataDir, 'Default'), { recursive: true });
  writeFileSync(join(userDataDir, 'Default', 'Preferences'), JSON.stringify(preferences));
  return chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs], timeout: 15_000 });
}

export interface PageServer {
  /** `http://127.0.0.1:<port>`, or on TLS `https://localhost:<port>`: the page's origin. */
  readonly origin: string;
  close(): Promise<void>;
}

const PAGE_HTML = `<!doctype html>
<html>
<head><meta charset="utf-8"><title>${PAGE_TITLE}</title></head>
<body>
<p>MDP browser client test page</p>
<script src="/page-client.js"></script>
</body>
</html>
`;

/**
 * Serve the test page (`/`) and its script (`/page-client.js`) on 127.0.0.1, port 0. No cookies, no
 * CORS. With `tls` (a key and certificate for localhost) over HTTPS, named `https://localhost:<port>`:
 * another site than an MDP server at `https://127.0.0.1:<port>`.
 */
export async function startPageServer(tls?: { readonly key: Buffer; readonly cert: Buffer }): Promise<PageServer> {
  const script = readFileSync(new URL('./page-client.js', import.meta.url), 'utf8');
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(PAGE_HTML);
    } else if (req.method === 'GET' && path === '/page-client.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
      res.end(script);
    } else {
      res.writeHead(404);
      res.end();
    }
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Load the test page from `origin` into `page`, its uncaught errors going to `errors`. */
export async function loadTestPage(page: Page, origin: string, errors: string[]): Promise<void> {
  page.on('pageerror', (error) => errors.push(error.message));
  page.setDefaultTimeout(WAIT_MS);
  await page.goto(`${origin}/`);
  await page.waitForFunction('window.mdpPage !== undefined');
  const title = await page.title();
  if (title !== PAGE_TITLE) throw new Error(`the test page has the title ${JSON.stringify(title)}`);
}

/** The API page-client.js puts on `window.mdpPage`. */
export interface PageApi {
  useHeaders(headers: Record<string, string>): void;
  bootstrapCookie(mdpHttp: string, auth: unknown): Promise<{ status: number; cacheControl: string | null; body: string; documentCookie: string }>;
  clearCookie(mdpHttp: string): Promise<{ status: number; body: string }>;
  readSkill(url: string): Promise<{ status: number; contentType: string | null; text: string }>;
  openWebSocketClient(wsUrl: string, descriptor: unknown, auth?: unknown): Promise<void>;
  closeWebSockets(): void;
  wsState(): { pongs: number; calls: Array<Record<string, unknown>>; closed: Array<{ clientId: string; code: number; reason: string }> };
  loopConnect(mdpHttp: string): Promise<{ status: number; sessionId: string | undefined; body: string }>;
  loopSend(mdpHttp: string, sessionId: string, message: unknown): Promise<{ status: number; body: string }>;
  loopPoll(mdpHttp: string, sessionId: string, waitMs: number): Promise<{ status: number; message: unknown; body: string }>;
  startPolling(mdpHttp: string, sessionId: string): void;
  loopDisconnect(mdpHttp: string): Promise<{ disconnect: number; pollAfter: number; pollAfterBody: string; error: string | undefined }>;
  loopState():
    | { sessionId: string; running: boolean; polls: number[]; sends: number[]; calls: Array<Record<string, unknown>>; error: string | undefined }
    | undefined;
}

/**
 * Call `window.mdpPage[method](...args)` in the page and return its (awaited) result. The evaluated
 * function is a single arrow expression so the bundler adds no helpers to its source.
 */
export function callPage<K extends keyof PageApi>(page: Page, method: K, ...args: Parameters<PageApi[K]>): Promise<Awaited<ReturnType<PageApi[K]>>> {
  return page.evaluate(([name, values]) => (globalThis as unknown as { mdpPage: Record<string, (...a: unknown[]) => unknown> }).mdpPage[name]!(...values), [
    method,
    args,
  ] as [string, unknown[]]) as Promise<Awaited<ReturnType<PageApi[K]>>>;
}
