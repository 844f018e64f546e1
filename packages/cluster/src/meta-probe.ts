/**
 * Probing `GET /mdp/meta` (SPEC §9; used by discovery, §10, and by `mdp-probe`, §11).
 *
 * A probe answers one question, "does this address serve MDP, and what does it say about itself?",
 * and never throws: whatever goes wrong becomes a failed `ProbeResult` whose `kind` separates
 * "nothing answered" (`unreachable`) from "something answered, but it is not MDP" (`not-mdp`).
 */
import { isIPv6 } from 'node:net';
import { parseMetaDocument, type MetaDocument } from '@mdp/protocol';

export const PROBE_DEFAULTS = Object.freeze({
  /** Time allowed for one probe, connect to last byte, in ms. Short so a frozen peer cannot stall a discovery round. */
  timeoutMs: 1000,
  /** Largest response body read, in bytes; a real metadata document is under 2 KiB. */
  maxBodyBytes: 256 * 1024,
  /** Probes in flight at once in `scanRange`; the default 100-port range goes out in one wave. */
  concurrency: 128,
  /** Host used when a target names only a port. */
  host: '127.0.0.1',
  /** Default MDP port (SPEC §5), used when a target names only a host. */
  port: 47372,
});

export type ProbeFailureKind = 'unreachable' | 'not-mdp';

export type ProbeResult =
  | { readonly ok: true; readonly url: string; readonly meta: MetaDocument }
  | { readonly ok: false; readonly url: string; readonly reason: string; readonly kind: ProbeFailureKind };

export interface ProbeOptions {
  /** Time allowed for the whole probe, in ms (default 1000). */
  timeoutMs?: number;
  /** Aborts the probe early; it then resolves as `unreachable`. */
  signal?: AbortSignal;
  /** Largest body read, in bytes (default 256 KiB); a larger answer is `not-mdp`. */
  maxBodyBytes?: number;
}

export interface ScanOptions extends ProbeOptions {
  /** Probes in flight at once (default 128). */
  concurrency?: number;
}

/** A target that cannot be turned into a base URL (bad port, bad host, unsupported scheme). */
export class InvalidTargetError extends Error {
  readonly code = 'invalid_target';
  readonly target: string;

  constructor(target: string, message: string) {
    super(message);
    this.name = 'InvalidTargetError';
    this.target = target;
  }
}

// Suffixes of the endpoints a metadata document lists; a URL ending in one names the same server.
const ENDPOINT_SUFFIX = /\/mdp\/(?:meta|cluster|http-loop|auth)\/?$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const HOST_NAME = /^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$/i;

/**
 * Turn `URL | PORT | HOST:PORT | HOST` into a base URL without a trailing slash, e.g.
 * `47372` → `http://127.0.0.1:47372`, `[::1]:8080` → `http://[::1]:8080`,
 * `ws://h:1/mdp/cluster` → `http://h:1`. A bare host gets port 47372.
 * @throws InvalidTargetError
 */
export function normalizeTarget(arg: string): string {
  const text = arg.trim();
  if (text === '') throw new InvalidTargetError(arg, 'empty target');
  if (SCHEME.test(text)) return baseFromUrl(arg, text);
  if (/^\d+$/.test(text)) return origin(arg, PROBE_DEFAULTS.host, parsePort(arg, text));

  let host: string;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] ?? '';
    portText = bracketed[2];
    if (!isIPv6(host)) throw new InvalidTargetError(arg, `bad IPv6 address '${host}'`);
  } else if (isIPv6(text)) {
    host = text;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? undefined : text.slice(colon + 1);
    if (host.includes(':')) throw new InvalidTargetError(arg, `bad host '${host}' (write IPv6 as [::1]:47372)`);
    if (!HOST_NAME.test(host)) throw new InvalidTargetError(arg, `bad host '${host}'`);
  }
  const port = portText === undefined ? PROBE_DEFAULTS.port : parsePort(arg, portText);
  return origin(arg, host, port);
}

/** `http://host:port` for a host (IPv6 bracketed) and port. */
function origin(arg: string, host: string, port: number): string {
  const hostPart = isIPv6(host) ? `[${host}]` : host;
  try {
    return new URL(`http://${hostPart}:${port}`).origin;
  } catch {
    throw new InvalidTargetError(arg, `bad host '${host}'`);
  }
}

function parsePort(arg: string, text: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new InvalidTargetError(arg, `bad port '${text}' (expected 1-65535)`);
  return port;
}

function baseFromUrl(arg: string, text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidTargetError(arg, `bad URL '${text}'`);
  }
  // The websocket URLs of a metadata document name the same server as its HTTP base.
  const scheme = { 'http:': 'http:', 'https:': 'https:', 'ws:': 'http:', 'wss:': 'https:' }[url.protocol];
  if (!scheme) throw new InvalidTargetError(arg, `unsupported scheme '${url.protocol}' (expected http, https, ws or wss)`);
  if (!url.hostname) throw new InvalidTargetError(arg, `URL '${text}' has no host`);
  const path = url.pathname.replace(ENDPOINT_SUFFIX, '').replace(/\/+$/, '');
  return `${scheme}//${url.host}${path}`;
}

/** The metadata URL of a base URL. */
export function metaUrlOf(baseUrl: string): string {
  return `${baseUrl}/mdp/meta`;
}

/**
 * GET `<base>/mdp/meta` and validate the answer. Accepts anything `normalizeTarget` does.
 * Never throws; a target that cannot be parsed resolves as `unreachable`.
 */
export async function probeMeta(url: string, options: ProbeOptions = {}): Promise<ProbeResult> {
  let base: string;
  try {
    base = normalizeTarget(url);
  } catch (error) {
    return { ok: false, url, kind: 'unreachable', reason: (error as Error).message };
  }
  const fail = (kind: ProbeFailureKind, reason: string): ProbeResult => ({ ok: false, url: base, kind, reason });
  const timeoutMs = options.timeoutMs ?? PROBE_DEFAULTS.timeoutMs;
  const maxBodyBytes = options.maxBodyBytes ?? PROBE_DEFAULTS.maxBodyBytes;
  // One deadline for connect, headers and body, so a server that stalls mid-body is caught too.
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const stopped = (): [ProbeFailureKind, string] | undefined => {
    if (options.signal?.aborted) return ['unreachable', 'probe aborted'];
    if (timeout.aborted) return ['unreachable', `no answer within ${timeoutMs} ms`];
    return undefined;
  };

  let response: Response;
  try {
    response = await fetch(metaUrlOf(base), {
      // `connection: close`: a probe is one request; an idle keep-alive socket would outlive it.
      headers: { accept: 'application/json', connection: 'close' },
      // Report what this address answers, not what some other address answers.
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    return fail(...(stopped() ?? describeFetchError(error)));
  }

  const contentType = response.headers.get('content-type') ?? '';
  if (response.status < 200 || response.status > 299) {
    await response.body?.cancel().catch(() => undefined);
    const location = response.headers.get('location');
    const redirect = response.status >= 300 && response.status < 400 && location ? ` (redirect to ${location})` : '';
    return fail('not-mdp', `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${redirect}`);
  }

  let text: string | undefined;
  try {
    text = await readLimited(response, maxBodyBytes);
  } catch (error) {
    return fail(...(stopped() ?? ['unreachable', `answer cut short: ${messageOf(error)}`]));
  }
  if (text === undefined) return fail('not-mdp', `answer larger than ${maxBodyBytes} bytes`);

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    if (/html/i.test(contentType) || /^\s*</.test(text)) {
      return fail('not-mdp', `answered an HTML page${contentType ? ` (${contentType})` : ''}, not JSON`);
    }
    return fail('not-mdp', `invalid JSON${contentType ? ` (${contentType})` : ''}: ${messageOf(error)}`);
  }
  const parsed = parseMetaDocument(json);
  if (!parsed.ok) return fail('not-mdp', `not an MDP metadata document: ${parsed.error}`);
  return { ok: true, url: base, meta: parsed.value };
}

/** Read the body as UTF-8, or `undefined` once it exceeds `maxBytes`. */
async function readLimited(response: Response, maxBytes: number): Promise<string | undefined> {
  if (!response.body) return '';
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await response.body.cancel().catch(() => undefined);
    return undefined;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Kind and wording for an error fetch threw before any answer arrived. */
function describeFetchError(error: unknown): [ProbeFailureKind, string] {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : '';
  switch (code) {
    case 'ECONNREFUSED':
      return ['unreachable', 'connection refused'];
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return ['unreachable', 'host not found'];
    case 'ECONNRESET':
      return ['unreachable', 'connection reset'];
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return ['unreachable', 'host unreachable'];
    case 'UND_ERR_SOCKET':
      // Something listens there, but it hung up instead of answering HTTP.
      return ['not-mdp', 'closed the connection without an HTTP answer'];
  }
  // llhttp parse errors: the port speaks something other than HTTP.
  if (code.startsWith('HPE_')) return ['not-mdp', 'answer is not HTTP'];
  // fetch refuses the WHATWG "bad ports" (e.g. 1, 22, 6000, 10080) before connecting.
  if (cause?.message === 'bad port') return ['unreachable', 'port blocked by fetch (WHATWG bad port list)'];
  return ['unreachable', messageOf(cause ?? error)];
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && message ? message : String(error);
}

/**
 * Probe every port of `fromPort..toPort` (inclusive) on `host`, at most `concurrency` at a time.
 * Results come back in port order. Rejects with `RangeError` for a bad range and
 * `InvalidTargetError` for a bad host; individual probes never reject.
 */
export async function scanRange(
  host: string,
  fromPort: number,
  toPort: number,
  options: ScanOptions = {},
): Promise<ProbeResult[]> {
  for (const port of [fromPort, toPort]) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`bad port ${port} (expected 1-65535)`);
  }
  if (fromPort > toPort) throw new RangeError(`bad port range ${fromPort}-${toPort} (start after end)`);
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const first = normalizeTarget(isIPv6(bare) ? `[${bare}]:${fromPort}` : `${bare}:${fromPort}`);
  const hostPart = new URL(first).hostname;
  const urls = Array.from({ length: toPort - fromPort + 1 }, (_, i) => `http://${hostPart}:${fromPort + i}`);
  return mapLimited(urls, options.concurrency ?? PROBE_DEFAULTS.concurrency, (url) => probeMeta(url, options));
}

/** `Promise.all(items.map(fn))` with at most `limit` calls pending; order is kept. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  };
  const workers = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return results;
}
