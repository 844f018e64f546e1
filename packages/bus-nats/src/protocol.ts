/**
 * The JSON bodies nodes exchange over the bus, with valibot schemas for what arrives. A peer node
 * is part of the fleet, but what it sends is still parsed: a malformed body is answered with an
 * error or ignored, never trusted.
 *
 *   <prefix>.n.<node>.call.<client>      RemoteCall            → InvokeOutcome
 *   <prefix>.n.<node>.catalog.<client>   { clientId }          → CatalogAnswer
 *   <prefix>.n.<node>.cancel             { id }                  (no answer)
 *   <prefix>.n.<node>.relay              any bytes             → any bytes
 *   <prefix>.s.<session>                 any bytes             → any bytes
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import {
  AuthContextSchema,
  ClientDescriptorSchema,
  ENDPOINT_METHODS,
  MAX_JSON_DEPTH,
  SerializedErrorSchema,
  StringRecordSchema,
  jsonDepthWithin,
} from '@mdp/protocol';
import type { AuthContext, ClientDescriptor, EndpointMethod, SerializedError } from '@mdp/protocol';
import type { InvokeOutcome } from '@mdp/core';

/** A call for a client on another node: what core's invocation carries, minus in-process extras. */
export interface RemoteCall {
  readonly method: EndpointMethod;
  readonly path: string;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly auth?: AuthContext;
  /** The surface the call came through on the caller's node (`skill`, `host`, `mcp`), for the holder's logs. */
  readonly route?: string;
}

/**
 * A value of a call or an answer (a body, a client's data), nested no deeper than the protocol lets
 * a client's own messages nest: no edge of the node it reaches need take more from the bus.
 */
const BoundedValue = v.pipe(
  v.unknown(),
  v.check((value) => jsonDepthWithin(value, MAX_JSON_DEPTH), `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`),
);

export const CallEnvelopeSchema = v.object({
  /** Random id, to cancel the call. */
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
  clientId: v.pipe(v.string(), v.minLength(1)),
  /** Time the holder gives the client, ms. */
  timeoutMs: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(24 * 3600_000)),
  method: v.picklist(ENDPOINT_METHODS),
  path: v.string(),
  query: v.optional(StringRecordSchema),
  body: v.optional(BoundedValue),
  headers: v.optional(StringRecordSchema),
  auth: v.optional(AuthContextSchema),
  route: v.optional(v.pipe(v.string(), v.maxLength(32))),
});
export type CallEnvelope = v.InferOutput<typeof CallEnvelopeSchema>;

export const OutcomeSchema = v.variant('ok', [
  v.object({ ok: v.literal(true), data: v.optional(BoundedValue) }),
  v.object({ ok: v.literal(false), error: SerializedErrorSchema, source: v.picklist(['client', 'server']) }),
]);

export const CatalogRequestSchema = v.object({ clientId: v.pipe(v.string(), v.minLength(1)) });

export const CatalogAnswerSchema = v.variant('ok', [
  v.object({ ok: v.literal(true), descriptor: ClientDescriptorSchema }),
  v.object({ ok: v.literal(false), error: SerializedErrorSchema }),
]);
export type CatalogAnswer = { readonly ok: true; readonly descriptor: ClientDescriptor } | { readonly ok: false; readonly error: SerializedError };

export const CancelSchema = v.object({ id: v.pipe(v.string(), v.minLength(1), v.maxLength(64)) });

const decoder = new TextDecoder('utf-8', { fatal: false });

/** JSON as UTF-8 bytes (a Buffer from node's pool: for small bodies far cheaper than a TextEncoder's array). */
export function encodeJson(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/*
 * Fast paths. Every remote call is one call envelope out and one outcome back, and valibot's walk of
 * the two schemas above was a good part of what a node spends on them. The two checks below read
 * the common shapes by hand. Each either returns exactly what the schema would (same fields, unknown
 * ones dropped) or undefined, which means "not sure": the value then goes through the schema,
 * which stays the judge of everything the fast path does not take (auth, a failed outcome, keys
 * like `__proto__`, anything malformed). So a fast path can only be narrower than its schema, never
 * wider; protocol.test.ts checks that on hostile values.
 */

const METHODS: ReadonlySet<string> = new Set(ENDPOINT_METHODS);
const MAX_TIMEOUT_MS = 24 * 3600_000;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keys `v.record` leaves out of its output: a record with one is left to the schema. */
function isSpecialKey(key: string): boolean {
  return key === '__proto__' || key === 'prototype' || key === 'constructor';
}

/** A string-to-string record exactly as StringRecordSchema outputs it (a copy), or undefined. */
function fastStringRecord(value: unknown): Record<string, string> | undefined {
  if (!isPlainObject(value)) return undefined;
  const out: Record<string, string> = {};
  for (const key of Object.keys(value)) {
    const entry = value[key];
    if (typeof entry !== 'string' || isSpecialKey(key)) return undefined;
    out[key] = entry;
  }
  return out;
}

/** A call envelope without `auth` in its usual shape, as CallEnvelopeSchema outputs it; undefined: ask the schema. */
export function fastCallEnvelope(value: unknown): CallEnvelope | undefined {
  if (!isPlainObject(value)) return undefined;
  const { id, clientId, timeoutMs, method, path, query, body, headers, auth, route } = value;
  if (typeof id !== 'string' || id.length < 1 || id.length > 64) return undefined;
  if (typeof clientId !== 'string' || clientId.length < 1) return undefined;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) return undefined;
  if (typeof method !== 'string' || !METHODS.has(method)) return undefined;
  if (typeof path !== 'string') return undefined;
  if (auth !== undefined) return undefined;
  if (route !== undefined && (typeof route !== 'string' || route.length > 32)) return undefined;
  if (body !== undefined && !jsonDepthWithin(body, MAX_JSON_DEPTH)) return undefined;
  let queryOut: Record<string, string> | undefined;
  if (query !== undefined && (queryOut = fastStringRecord(query)) === undefined) return undefined;
  let headersOut: Record<string, string> | undefined;
  if (headers !== undefined && (headersOut = fastStringRecord(headers)) === undefined) return undefined;
  const envelope: { -readonly [K in keyof CallEnvelope]: CallEnvelope[K] } = { id, clientId, timeoutMs, method: method as CallEnvelope['method'], path };
  if (queryOut !== undefined) envelope.query = queryOut;
  if (body !== undefined) envelope.body = body;
  if (headersOut !== undefined) envelope.headers = headersOut;
  if (route !== undefined) envelope.route = route;
  return envelope;
}

/** The call an envelope carries, as the holder's handler takes it (built field by field: no spreads per call). */
export function remoteCallOf(envelope: CallEnvelope): RemoteCall {
  const call: { -readonly [K in keyof RemoteCall]: RemoteCall[K] } = { method: envelope.method, path: envelope.path };
  if (envelope.query !== undefined) call.query = envelope.query;
  if (envelope.body !== undefined) call.body = envelope.body;
  if (envelope.headers !== undefined) call.headers = envelope.headers;
  if (envelope.auth !== undefined) call.auth = envelope.auth;
  if (envelope.route !== undefined) call.route = envelope.route;
  return call;
}

export type Outcome = v.InferOutput<typeof OutcomeSchema>;

/** A successful outcome (`{ ok: true, data? }`), as OutcomeSchema outputs it; undefined: ask the schema. */
export function fastOutcome(value: unknown): Outcome | undefined {
  if (!isPlainObject(value) || value.ok !== true) return undefined;
  const { data } = value;
  if (data === undefined) return { ok: true };
  return jsonDepthWithin(data, MAX_JSON_DEPTH) ? { ok: true, data } : undefined;
}

/** A call envelope from the bus: the fast path, else the schema; undefined when it is not one. */
export function decodeCallEnvelope(bytes: Uint8Array): CallEnvelope | undefined {
  return decodeWith(CallEnvelopeSchema, fastCallEnvelope, bytes);
}

/** A call's outcome from the bus: the fast path, else the schema; undefined when it is not one. */
export function decodeOutcome(bytes: Uint8Array): Outcome | undefined {
  return decodeWith(OutcomeSchema, fastOutcome, bytes);
}

function decodeWith<S extends v.GenericSchema>(
  schema: S,
  fast: (value: unknown) => v.InferOutput<S> | undefined,
  bytes: Uint8Array,
): v.InferOutput<S> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
  const quick = fast(value);
  if (quick !== undefined) return quick;
  const parsed = v.safeParse(schema, value);
  return parsed.success ? parsed.output : undefined;
}

/** Parse `bytes` as JSON and check it against `schema`; undefined when either fails. */
export function decodeJson<S extends v.GenericSchema>(schema: S, bytes: Uint8Array): v.InferOutput<S> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(schema, value);
  return parsed.success ? parsed.output : undefined;
}

/** The outcome of a call that failed on the server's side (never the client's). */
export function serverFailure(code: SerializedError['code'], message: string, details?: Record<string, unknown>): InvokeOutcome {
  return { ok: false, source: 'server', error: details ? { code, message, details } : { code, message } };
}

/**
 * Digest of a client's descriptor (its catalog), announced in the directory: 22 characters of
 * base64url SHA-256 (132 bits). A node that sees it change fetches the descriptor again.
 */
export function descriptorDigest(descriptor: ClientDescriptor): string {
  return createHash('sha256').update(JSON.stringify(descriptor)).digest('base64url').slice(0, 22);
}
