/**
 * Probing `GET /mdp/meta` (SPEC §9; used by discovery, §10, and by `mdp-probe`, §11).
 *
 * A probe answers one question, "does this address serve MDP, and what does it say about itself?",
 * and never throws: whatever goes wrong becomes a failed `ProbeResult` whose `kind` separates
 * "nothing answered" (`unreachable`) from "something answered, but it is not MDP" (`not-mdp`).
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIP, isIPv6, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { urlHost } from '@mdp/core';
import { DEFAULT_PORT, parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import { childSignal } from './child-signal.js';
import { mapLimited } from './map-limited.js';
import { currentTls, tlsConnectOptions, type PeerTls, type PeerTlsSource } from './tls.js';

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
  port: DEFAULT_PORT,
});

export type ProbeFailureKind = 'unreachable' | 'not-mdp';

export type ProbeResult =
  | { readonly ok: true; readonly url: string; readonly meta: MetaDocument }
  | {
      readonly ok: false;
      readonly url: string;
      readonly reason: string;
      readonly kind: ProbeFailureKind;
      /** The host refused the connection (ECONNREFUSED): nothing listens at that port. */
      readonly refused?: true;
    };

export interface ProbeOptions {
  /** Time allowed for the whole probe, in ms (default 1000). */
  timeoutMs?: number;
  /** Aborts the probe early; it then resolves as `unreachable`. */
  signal?: AbortSignal;
  /** Largest body read, in bytes (default 256 KiB); a larger answer is `not-mdp`. */
  maxBodyBytes?: number;
  /**
   * TLS of `https` probes: the CA to verify against, or `rejectUnauthorized: false`. With it, a
   * target that names no scheme (PORT, HOST:PORT, HOST) is probed over HTTPS. Default: node's CAs,
   * and plain HTTP for such targets.
   */
  tls?: PeerTls;
}

export interface ScanOptions extends ProbeOptions {
  /** Probes in flight at once (default 128). */
  concurrency?: number;
}

/**
 * A target that cannot be turned into a base URL (bad port, bad host, unsupported scheme). Told
 * apart by its class: it never goes on the wire, so it carries no code of the protocol's.
 */
export class InvalidTargetError extends Error {
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

/** Scheme of a base URL: `http`, or `https` for a server on TLS. */
export type BaseScheme = 'http' | 'https';

/**
 * Turn `URL | PORT | HOST:PORT | HOST` into a base URL without a trailing slash, e.g.
 * `47372` → `http://127.0.0.1:47372`, `[::1]:8080` → `http://[::1]:8080`,
 * `ws://h:1/mdp/cluster` → `http://h:1`, `wss://h:1` → `https://h:1`. A bare host gets port
 * 47372; a target without a scheme gets `scheme`.
 * @throws InvalidTargetError
 */
export function normalizeTarget(arg: string, scheme: BaseScheme = 'http'): string {
  const text = arg.trim();
  if (text === '') throw new InvalidTargetError(arg, 'empty target');
  if (SCHEME.test(text)) return baseFromUrl(arg, text);
  if (/^\d+$/.test(text)) return origin(arg, scheme, PROBE_DEFAULTS.host, parsePort(arg, text));

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
  return origin(arg, scheme, host, port);
}

/** `http://host:port` (or `https://`) for a host (IPv6 bracketed) and port. */
function origin(arg: string, scheme: BaseScheme, host: string, port: number): string {
  const hostPart = urlHost(host);
  try {
    // URL drops a scheme's default port: https on 443 and http on 80 alike.
    return new URL(`${scheme}://${hostPart}:${port}`).origin;
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
  if (url.port === '0') throw new InvalidTargetError(arg, "bad port '0' (expected 1-65535)");
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
    base = normalizeTarget(url, options.tls ? 'https' : 'http');
  } catch (error) {
    return { ok: false, url, kind: 'unreachable', reason: (error as Error).message };
  }
  const fail = (kind: ProbeFailureKind, reason: string, refused?: boolean): ProbeResult => ({
    ok: false,
    url: base,
    kind,
    reason,
    ...(refused ? { refused: true } : {}),
  });
  const maxBodyBytes = options.maxBodyBytes ?? PROBE_DEFAULTS.maxBodyBytes;
  const answer = await getText(metaUrlOf(base), options.timeoutMs ?? PROBE_DEFAULTS.timeoutMs, maxBodyBytes, options.signal, options.tls);
  if ('failure' in answer) return fail(...answer.failure);

  const { status, statusText, contentType, location, text } = answer;
  if (status < 200 || status > 299) {
    const redirect = status >= 300 && status < 400 && location ? ` (redirect to ${location})` : '';
    return fail('not-mdp', `HTTP ${status}${statusText ? ` ${statusText}` : ''}${redirect}`);
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

/** What one GET brought back: an HTTP answer (its body only for a 2xx), or why there was none. */
type Fetched =
  | {
      readonly status: number;
      readonly statusText: string;
      readonly contentType: string;
      readonly location: string | undefined;
      /** UTF-8 body of a 2xx answer; `undefined` once it exceeds `maxBodyBytes`. */
      readonly text: string | undefined;
    }
  | { readonly failure: Failure };

/** Kind and wording of a failure, and whether the connection was refused. */
type Failure = [kind: ProbeFailureKind, reason: string, refused?: boolean];

/**
 * One GET with node's own client: a discovery round sends a hundred of these every two seconds,
 * mostly to closed ports, where `fetch` costs several times more CPU per attempt. One deadline
 * covers connect, TLS handshake, headers and body, so a server that stalls mid-body is caught too.
 * No redirect is followed: a probe reports what this address answers, not what some other address
 * answers.
 */
function getText(target: string, timeoutMs: number, maxBodyBytes: number, signal: AbortSignal | undefined, tls: PeerTls | undefined): Promise<Fetched> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve({ failure: ['unreachable', 'probe aborted'] });
    let request: ClientRequest | undefined;
    let tcp: Socket | undefined;
    let secure: TLSSocket | undefined;
    let settled = false;
    const settle = (result: Fetched): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // A probe is one request: nothing of it outlives the answer.
      request?.destroy();
      secure?.destroy();
      tcp?.destroy();
      resolve(result);
    };
    const onAbort = (): void => settle({ failure: ['unreachable', 'probe aborted'] });
    const timer = setTimeout(() => settle({ failure: ['unreachable', `no answer within ${timeoutMs} ms`] }), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    const onResponse = (response: IncomingMessage): void => {
      const head = headOf(response);
      const { status } = head;
      const declared = Number(response.headers['content-length']);
      // The body of a non-2xx answer, or of one declared too large, is never read.
      if (status < 200 || status > 299) return settle({ ...head, text: '' });
      if (declared > maxBodyBytes) return settle({ ...head, text: undefined });
      const chunks: Buffer[] = [];
      let total = 0;
      response.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > maxBodyBytes) settle({ ...head, text: undefined });
        else chunks.push(chunk);
      });
      response.on('end', () => settle({ ...head, text: Buffer.concat(chunks, total).toString('utf8') }));
      response.on('error', (error) => settle({ failure: ['unreachable', `answer cut short: ${messageOf(error)}`] }));
      // After 'end' this changes nothing; before it, the body was cut off.
      response.on('close', () => settle({ failure: ['unreachable', 'answer cut short: connection closed'] }));
    };

    const send = (url: URL, connected?: Socket | TLSSocket): void => {
      const get = url.protocol === 'https:' ? httpsRequest : httpRequest;
      // `connection: close` and no pooling: an idle keep-alive socket would outlive the probe. With
      // a connected socket that takes no agent at all (an agent, even `agent: false`, ignores
      // `createConnection` and dials a second connection of its own).
      const options: RequestOptions = { method: 'GET', headers: { accept: 'application/json', connection: 'close' } };
      if (connected) options.createConnection = () => connected;
      else options.agent = false;
      request = get(url, options, onResponse);
      // Stays attached: a request destroyed after it settled may still report an error.
      request.on('error', (error) => settle({ failure: describeRequestError(error) }));
      // A 101 goes to 'upgrade', not to the response callback: it is an answer, and not MDP's.
      request.on('upgrade', (response: IncomingMessage, upgraded: Duplex) => {
        upgraded.destroy();
        settle({ ...headOf(response), text: '' });
      });
      request.end();
    };
    let url: URL;
    try {
      url = new URL(target);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return send(url);
    } catch (error) {
      return settle({ failure: ['unreachable', messageOf(error)] });
    }
    const https = url.protocol === 'https:';
    // Most ports of a discovery range are closed. A bare TCP connect learns that for half the CPU
    // of an HTTP request (or a TLS handshake); only a port that accepts gets the GET, on that same
    // connection.
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const socket = (tcp = connect({ host, port: url.port === '' ? (https ? 443 : 80) : Number(url.port) }));
    // Stays attached for the socket's whole life: a reset may come at any time, also after settle.
    socket.on('error', (error) => settle({ failure: describeRequestError(error) }));
    const sendOn = (connected: Socket | TLSSocket): void => {
      if (settled) return;
      try {
        send(url, connected);
      } catch (error) {
        settle({ failure: ['unreachable', messageOf(error)] });
      }
    };
    socket.once('connect', () => {
      if (settled) return;
      if (!https) return sendOn(socket);
      // The certificate is checked against `host`; SNI carries only names, never an address.
      secure = tlsConnect({ ...tlsConnectOptions(tls ?? {}), socket, host, ...(isIP(host) ? {} : { servername: host }) });
      secure.on('error', (error) => settle({ failure: describeRequestError(error) }));
      secure.once('secureConnect', () => sendOn(secure as TLSSocket));
    });
  });
}

/** Status line and headers of an answer, as a {@link Fetched} reports them. */
function headOf(response: IncomingMessage) {
  return {
    status: response.statusCode ?? 0,
    statusText: response.statusMessage ?? '',
    contentType: response.headers['content-type'] ?? '',
    location: response.headers.location,
  };
}

/** Kind and wording for an error the request reported before any answer arrived. */
function describeRequestError(error: Error): Failure {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  // node's words for a connection that closed before a response came: something listens there,
  // but it hung up instead of answering HTTP.
  if (error.message === 'socket hang up') return ['not-mdp', 'closed the connection without an HTTP answer'];
  switch (code) {
    case 'ECONNREFUSED':
      return ['unreachable', 'connection refused', true];
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return ['unreachable', 'host not found'];
    case 'ECONNRESET':
      return ['unreachable', 'connection reset'];
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return ['unreachable', 'host unreachable'];
  }
  // llhttp parse errors: the port speaks something other than HTTP.
  if (code.startsWith('HPE_')) return ['not-mdp', 'answer is not HTTP'];
  // Something answered TLS, with a certificate this probe does not trust.
  if (CERTIFICATE_ERRORS.has(code) || code.startsWith('ERR_TLS_CERT')) return ['not-mdp', `TLS certificate not trusted: ${messageOf(error)} (${code})`];
  // OpenSSL's errors for a handshake that failed, e.g. a plain HTTP server on the port.
  if (code.startsWith('ERR_SSL_')) return ['not-mdp', `no TLS handshake: ${messageOf(error)}`];
  return ['unreachable', messageOf(error)];
}

/** OpenSSL's verification failures, as node reports them in `error.code`. */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'HOSTNAME_MISMATCH',
]);

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && message ? message : String(error);
}

/**
 * Probe every port of `fromPort..toPort` (inclusive) on `host`, at most `concurrency` at a time.
 * Results come back in port order. Rejects with `RangeError` for a bad range and
 * `InvalidTargetError` for a bad host; individual probes never reject.
 */
export async function scanRange(host: string, fromPort: number, toPort: number, options: ScanOptions = {}): Promise<ProbeResult[]> {
  for (const port of [fromPort, toPort]) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`bad port ${port} (expected 1-65535)`);
  }
  if (fromPort > toPort) throw new RangeError(`bad port range ${fromPort}-${toPort} (start after end)`);
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const scheme: BaseScheme = options.tls ? 'https' : 'http';
  const first = normalizeTarget(isIPv6(bare) ? `[${bare}]:${fromPort}` : `${bare}:${fromPort}`, scheme);
  const hostPart = new URL(first).hostname;
  const urls = Array.from({ length: toPort - fromPort + 1 }, (_, i) => `${scheme}://${hostPart}:${fromPort + i}`);
  const limit = options.concurrency ?? PROBE_DEFAULTS.concurrency;
  const { signal } = options;
  if (!signal) return mapLimited(urls, limit, (url) => probeMeta(url, options));
  // Every probe listens to the signal it gets: give them one of our own, so the caller's signal
  // carries one listener for the whole scan instead of one per probe in flight.
  const scan = childSignal(signal);
  try {
    return await mapLimited(urls, limit, (url) => probeMeta(url, { ...options, signal: scan.controller.signal }));
  } finally {
    scan.release();
  }
}

/** `probeMeta` under these TLS options (plain `probeMeta` without any). */
export function probeWith(source: PeerTlsSource | undefined): (url: string, options: ProbeOptions) => Promise<ProbeResult> {
  if (source === undefined) return probeMeta;
  return (url, options) => probeMeta(url, { ...options, tls: currentTls(source) });
}
