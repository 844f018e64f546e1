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

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
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
