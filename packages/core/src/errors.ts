import type { ErrorCode, SerializedError } from '@mdp/protocol';

/**
 * Why core refused something, beyond its wire code. The HTTP edges map it with `httpStatusOf`, the
 * websocket edge with its close table:
 *
 *   refusal           websocket close                 HTTP
 *   client_id_taken   4403 (held by another principal) 403 {error}
 *   missing_scope     4403 (credential lacks a scope)  403 {error}
 *   rate_limited      1013 (try again later)           429 {error} + Retry-After
 *   too_large         1009 (message too big)           413 {error}
 *   too_many_clients  4429 (too many from its address) 429 {error}
 *
 * `too_large`: a text, schema or catalog over its byte cap (sending it again will not help);
 * `too_many_clients`: its remote address holds `maxClientsPerAddress` clients already.
 */
export type Refusal = 'client_id_taken' | 'missing_scope' | 'rate_limited' | 'too_large' | 'too_many_clients';

/**
 * The one error type of the server. `code` is stable and is what edges map to the wire: only the
 * HTTP edge turns it into a status, only the websocket edge into a close code.
 */
export class MdpError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** Set when the error refuses a request that was valid but is not allowed (see {@link Refusal}). */
  readonly refusal: Refusal | undefined;
  /** With `rate_limited`: when the request may be made again, ms from now. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options?: { details?: Record<string, unknown>; cause?: unknown; refusal?: Refusal; retryAfterMs?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MdpError';
    this.code = code;
    this.details = options?.details;
    this.refusal = options?.refusal;
    this.retryAfterMs = options?.retryAfterMs;
  }

  toJSON(): SerializedError {
    return serializeError(this);
  }
}

/** What every edge answers for a failure that is not an `MdpError`: the cause is logged, never echoed. */
export const INTERNAL_ERROR: SerializedError = Object.freeze({ code: 'handler_error', message: 'Internal error' });

/** Serialize any thrown value. Unknown errors never leak their message: they become `INTERNAL_ERROR`. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof MdpError) {
    return error.details ? { code: error.code, message: error.message, details: error.details } : { code: error.code, message: error.message };
  }
  return INTERNAL_ERROR;
}

/** The longest wait a `Retry-After` header asks for, s: a peer's hint past it is taken as this. */
export const MAX_RETRY_AFTER_S = 3600;

/**
 * Whole seconds for a `Retry-After` header, from 1 to {@link MAX_RETRY_AFTER_S}. A hint that is no
 * finite number (a peer's `1e400` parses as Infinity) counts as none: a second.
 */
export function retryAfterSeconds(ms: number | undefined): number {
  const wait = ms !== undefined && Number.isFinite(ms) ? ms : 1000;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(wait / 1000)));
}

/**
 * The `Retry-After` header of a 503 answer for `error`: when its `details.retryAfterMs` says, else
 * in a second. One rule for every HTTP edge that answers a refused call (skill reads, host API).
 */
export function retryAfterHeader(error: SerializedError): { 'retry-after': string } {
  return { 'retry-after': String(retryAfterSeconds(retryHintMs(error))) };
}

/** When `error` says to try again (`details.retryAfterMs`, a number), ms; undefined when it does not say. */
export function retryHintMs(error: SerializedError): number | undefined {
  const ms = (error.details as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof ms === 'number' ? ms : undefined;
}

/**
 * The HTTP status of a failure, for every HTTP edge (SPEC §6, §8, §12): the client answering
 * `ok: false` is a bad gateway whatever its code; a failure of the server's own is mapped by its
 * refusal (see {@link Refusal}), else by its code.
 */
export function httpStatusOf(
  error: Pick<SerializedError, 'code'> & { readonly refusal?: Refusal | undefined },
  source: 'client' | 'server' = 'server',
): number {
  if (source === 'client') return 502;
  if (error.refusal === 'client_id_taken' || error.refusal === 'missing_scope') return 403;
  if (error.refusal === 'rate_limited' || error.refusal === 'too_many_clients') return 429;
  if (error.refusal === 'too_large') return 413;
  switch (error.code) {
    case 'bad_request':
      return 400;
    case 'not_found':
      return 404;
    case 'timeout':
      return 504;
    case 'not_ready':
      return 503;
    case 'handler_error':
      return 500;
    default:
      // transport_error (the client went away) and codes a peer server passed on.
      return 502;
  }
}
