/**
 * The listing scenario's two loads, each run in a load-generator process of its own (so that one's
 * JSON parsing never delays the other's timers):
 *
 * - `walkListings`: `walkers` loops, each walking every page of the largest listings there are, one
 *   after the other, for `durationMs`: `GET /mdp/clients` (all clients, whole catalogs), `GET
 *   /mdp/paths?depth=64` (every path) and `GET /mdp/paths?search=…` matching nothing (a search
 *   over every path), each with `limit=1000`, following `nextCursor` to the end.
 * - `probeMeta`: `GET /mdp/meta` every `intervalMs` (one at a time) for `durationMs`; every latency
 *   is kept, so p50, p99 and max are exact.
 */
import { Agent, request } from 'node:http';
import { SampleBuffer, summarize, type LatencySummary } from './stats.js';

/** A listing page unanswered this long is an error, ms. */
const PAGE_TIMEOUT_MS = 30_000;

export interface WalkArgs {
  readonly port: number;
  readonly walkers: number;
  readonly durationMs: number;
}

export interface WalkResult {
  /** Pages answered. */
  readonly pages: number;
  /** Bytes of JSON answered. */
  readonly bytes: number;
  /** Whole listings walked to their last page. */
  readonly walks: number;
  /** Largest page answered, bytes. */
  readonly largestPage: number;
  readonly errors: number;
  readonly lastError: string | undefined;
  readonly elapsedMs: number;
  /** Time to answer one page, ms. */
  readonly pageLatency: LatencySummary;
}

/** The listings each walker goes through in turn. */
export const LISTINGS = ['/mdp/clients?limit=1000', '/mdp/paths?depth=64&limit=1000', '/mdp/paths?search=no-such-text-anywhere&limit=1000'] as const;

function get(agent: Agent, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, path, method: 'GET', headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(PAGE_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${PAGE_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * The `nextCursor` of a page, read from its end (the server writes it last; a cursor is base64url):
 * parsing a megabyte of JSON per page would cost this process more than the server's page.
 */
export function nextCursorOf(body: string): string | undefined {
  const match = /"nextCursor":"([A-Za-z0-9_-]+)"\}$/.exec(body.slice(-8192));
  if (match) return match[1];
  if (!body.startsWith('{') || !body.endsWith('}')) throw new Error(`not a listing page: ${body.slice(0, 200)}`);
  return undefined;
}

export async function walkListings(args: WalkArgs): Promise<WalkResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: args.walkers });
  const latency = new SampleBuffer();
  let pages = 0;
  let bytes = 0;
  let walks = 0;
  let largestPage = 0;
  let errors = 0;
  let lastError: string | undefined;
  const started = performance.now();
  const deadline = started + args.durationMs;

  const walker = async (w: number): Promise<void> => {
    for (let turn = w; performance.now() < deadline; turn++) {
      const listing = LISTINGS[turn % LISTINGS.length] as string;
      let cursor: string | undefined;
      do {
        const path = cursor === undefined ? listing : `${listing}&cursor=${encodeURIComponent(cursor)}`;
        const t0 = performance.now();
        try {
          const answer = await get(agent, args.port, path);
          if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body.slice(0, 200)}`);
          latency.push(performance.now() - t0);
          pages++;
          const size = Buffer.byteLength(answer.body);
          bytes += size;
          largestPage = Math.max(largestPage, size);
          cursor = nextCursorOf(answer.body);
        } catch (error) {
          errors++;
          lastError = `GET ${listing}: ${(error as Error).message}`;
          break;
        }
      } while (cursor !== undefined && performance.now() < deadline);
      if (cursor === undefined) walks++;
    }
  };
  await Promise.all(Array.from({ length: args.walkers }, (_, w) => walker(w)));
  agent.destroy();
  return { pages, bytes, walks, largestPage, errors, lastError, elapsedMs: performance.now() - started, pageLatency: summarize(latency) };
}

export interface ProbeArgs {
  readonly port: number;
  readonly durationMs: number;
  /** Time between the end of one probe and the next, ms. */
  readonly intervalMs: number;
}

export interface ProbeResult {
  readonly requests: number;
  readonly errors: number;
  readonly lastError: string | undefined;
  readonly latency: LatencySummary;
}

export async function probeMeta(args: ProbeArgs): Promise<ProbeResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latency = new SampleBuffer();
  let errors = 0;
  let lastError: string | undefined;
  const deadline = performance.now() + args.durationMs;
  while (performance.now() < deadline) {
    const t0 = performance.now();
    try {
      const answer = await get(agent, args.port, '/mdp/meta');
      if (answer.status !== 200) throw new Error(`${answer.status}`);
      latency.push(performance.now() - t0);
    } catch (error) {
      errors++;
      lastError = `GET /mdp/meta: ${(error as Error).message}`;
    }
    await new Promise((resolve) => setTimeout(resolve, args.intervalMs));
  }
  agent.destroy();
  return { requests: latency.length, errors, lastError, latency: summarize(latency) };
}
