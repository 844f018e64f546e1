/**
 * HTTP request bodies, for every HTTP edge: reading one under a byte limit (from a node
 * `IncomingMessage` or a Fetch `Request`), its strict UTF-8 text and its JSON.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { inflightCharge, type InflightBudget, type InflightHolder } from './inflight.js';

/**
 * A body read, or why not: 400 unreadable, 413 over the limit, 503 the node's in-flight budget
 * (inflight.ts) needed the room (try again later). After a 413 or 503 the rest of the body is not
 * read: answer with `Connection: close`.
 */
export type BodyResult = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly status: 400 | 413 | 503; readonly error: string };

/** The refusal of a body over `maxBytes`. */
export function bodyTooLarge(maxBytes: number): BodyResult {
  return { ok: false, status: 413, error: `Request body exceeds ${maxBytes} bytes` };
}

/** The budget's fields of a holder it does not count yet. */
const UNCOUNTED = { inflightCharge: 0, inflightPrev: undefined, inflightNext: undefined, inflightListed: false } as const;

/** The refusal of a body the in-flight budget evicted (`reason` names the limit). */
export function bodyEvicted(reason: string): BodyResult {
  return { ok: false, status: 503, error: reason };
}

export const BODY_UNREADABLE: BodyResult = { ok: false, status: 400, error: 'Request body could not be read' };
const NOT_UTF8: BodyResult = { ok: false, status: 400, error: 'Invalid JSON: body is not UTF-8' };

/**
 * Strict UTF-8 decoding with a leading BOM dropped: the same result as a fatal `TextDecoder`,
 * without its per-call cost (`isUtf8` is a native scan, `toString` the fast decoder).
 */
export function decodeBody(bytes: Buffer): BodyResult {
  if (!isUtf8(bytes)) return NOT_UTF8;
  const text = bytes.toString('utf8');
  return { ok: true, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
}

/**
 * Read a Fetch request body as UTF-8 text, refusing more than `maxBytes`: first by the declared
 * Content-Length (nothing is read), then by counting the bytes actually received, since a
 * chunked body declares no length and a declared one may lie. With `inflight`, what is read counts
 * against the node's budget until the body is complete; evicted, the body is cancelled (503).
 */
export async function readBodyText(request: Request, maxBytes: number, inflight?: InflightBudget): Promise<BodyResult> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) return bodyTooLarge(maxBytes);
  if (request.body === null) return { ok: true, text: '' };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let evicted: string | undefined;
  const holder: InflightHolder = {
    ...UNCOUNTED,
    evictInflight(reason) {
      evicted = reason;
      chunks.length = 0;
      reader.cancel().catch(() => undefined);
    },
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (evicted !== undefined) return bodyEvicted(evicted);
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        inflight?.release(holder);
        await reader.cancel().catch(() => undefined);
        return bodyTooLarge(maxBytes);
      }
      chunks.push(value);
      if (inflight && !inflight.hold(holder, inflightCharge(total, chunks.length))) return bodyEvicted(evicted ?? inflight.reason);
    }
  } catch {
    inflight?.release(holder);
    return evicted !== undefined ? bodyEvicted(evicted) : BODY_UNREADABLE;
  }
  inflight?.release(holder);
  return decodeBody(Buffer.concat(chunks, total));
}

export type JsonObjectResult = { readonly ok: true; readonly value: Record<string, unknown> } | { readonly ok: false; readonly error: string };

/** Parse a body that must be a JSON object; an empty body counts as `{}` when `emptyIsObject`. */
export function parseJsonObject(text: string, emptyIsObject: boolean): JsonObjectResult {
  if (text.trim() === '') {
    return emptyIsObject ? { ok: true, value: {} } : { ok: false, error: 'Invalid JSON: body is empty' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `Invalid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'Body must be a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

const EMPTY = Buffer.alloc(0);

/**
 * Read `req`'s body as UTF-8 text, refusing more than `maxBytes`: first by the declared
 * Content-Length (nothing is read), then by counting the bytes received. On overflow nothing more
 * is kept: what still arrives is discarded (so the client, still sending, is not reset before it
 * reads the answer) until node closes the connection, which it does once the caller's 413 with
 * `Connection: close` is written. The rest of an oversized body is never read. With `inflight`,
 * what is read counts against the node's budget until the body is complete; a body the budget
 * evicts is refused the same way, with 503.
 */
export function readNodeBody(req: IncomingMessage, maxBytes: number, inflight?: InflightBudget): Promise<BodyResult> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.resolve(bodyTooLarge(maxBytes));
  // Already read by someone else, or the client is gone: no 'end' will come.
  if (req.readableEnded || req.destroyed) return Promise.resolve(BODY_UNREADABLE);
  return new Promise<BodyResult>((resolve) => {
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let total = 0;
    let count = 0;
    let settled = false;
    const settle = (result: BodyResult): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      // The 'error' listener stays: a client that aborts later must not make node throw.
      if (inflight && count > 0) inflight.release(holder);
      first = undefined;
      chunks = undefined;
      resolve(result);
    };
    const holder: InflightHolder = { ...UNCOUNTED, evictInflight: (reason) => settle(bodyEvicted(reason)) };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > maxBytes) {
        // Removing the 'data' listener leaves the stream flowing: later chunks are dropped.
        settle(bodyTooLarge(maxBytes));
        return;
      }
      if (first === undefined) first = chunk;
      else (chunks ??= [first]).push(chunk);
      count++;
      // Evicted, it is settled already (the rest of the body is dropped as it comes).
      if (inflight) inflight.hold(holder, inflightCharge(total, count));
    };
    // Most bodies arrive in one chunk: decode it as is, without a copy.
    const onEnd = (): void => settle(decodeBody(chunks ? Buffer.concat(chunks, total) : (first ?? EMPTY)));
    const onError = (): void => settle(BODY_UNREADABLE);
    // 'close' before 'end': the client went away in the middle of its body.
    const onClose = (): void => settle(BODY_UNREADABLE);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
