/**
 * Helpers for the real-browser test: a plain node:http server for the test page (its own port, so
 * the page is a different origin from the MDP server) and the headless Chromium launch.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';

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

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 15_000 });
}

export interface PageServer {
  /** `http://127.0.0.1:<port>`, the page's origin. */
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

/** Serve the test page (`/`) and its script (`/page-client.js`) on 127.0.0.1, port 0. No cookies, no CORS. */
export async function startPageServer(): Promise<PageServer> {
  const script = readFileSync(new URL('./page-client.js', import.meta.url), 'utf8');
  const server: Server = createServer((req, res) => {
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
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The API page-client.js puts on `window.mdpPage`. */
export interface PageApi {
  bootstrapCookie(mdpHttp: string, auth: unknown): Promise<{ status: number; cacheControl: string | null; body: string; documentCookie: string }>;
  clearCookie(mdpHttp: string): Promise<{ status: number; body: string }>;
  readSkill(url: string): Promise<{ status: number; contentType: string | null; text: string }>;
  openWebSocketClient(wsUrl: string, descriptor: unknown): Promise<void>;
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
export function callPage<K extends keyof PageApi>(
  page: Page,
  method: K,
  ...args: Parameters<PageApi[K]>
): Promise<Awaited<ReturnType<PageApi[K]>>> {
  return page.evaluate(
    ([name, values]) =>
      (globalThis as unknown as { mdpPage: Record<string, (...a: unknown[]) => unknown> }).mdpPage[name]!(...values),
    [method, args] as [string, unknown[]],
  ) as Promise<Awaited<ReturnType<PageApi[K]>>>;
}
