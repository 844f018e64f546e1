/**
 * An HTTP request and its answer as relay payloads, for HTTP loop sessions behind a load balancer
 * without stickiness (SPEC §16): the node a `/send`, `/poll` or `/disconnect` lands on relays it to
 * the node that holds the session (`relayToSession`), which answers it as if it had come straight
 * in; the first node writes the answer back. Bodies are text (the HTTP loop's are JSON). What the
 * node that answers needs of the request is carried; hop-by-hop headers are not.
 */
import * as v from 'valibot';
import { StringRecordSchema } from '@mdp/protocol';
import { decodeJson, encodeJson } from './protocol.js';

const HttpRelaySchema = v.object({
  method: v.pipe(v.string(), v.regex(/^[A-Z]{1,16}$/)),
  /** Path and query as the client sent them (origin form). */
  target: v.pipe(v.string(), v.startsWith('/'), v.maxLength(8192)),
  headers: StringRecordSchema,
  body: v.string(),
});
export type HttpRelayRequest = v.InferOutput<typeof HttpRelaySchema>;

const HttpRelayAnswerSchema = v.object({
  status: v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(599)),
  headers: StringRecordSchema,
  body: v.string(),
});
export type HttpRelayAnswer = v.InferOutput<typeof HttpRelayAnswerSchema>;

/** Headers that belong to one connection and must not be passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'host']);

function endToEnd(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name.toLowerCase())) out[name.toLowerCase()] = value;
  return out;
}

export function encodeHttpRelay(request: HttpRelayRequest): Uint8Array {
  return encodeJson({ ...request, headers: endToEnd(request.headers) });
}

/** The request in a relay payload, or undefined when it is not one. */
export function decodeHttpRelay(payload: Uint8Array): HttpRelayRequest | undefined {
  return decodeJson(HttpRelaySchema, payload);
}

export function encodeHttpRelayAnswer(answer: HttpRelayAnswer): Uint8Array {
  return encodeJson({ ...answer, headers: endToEnd(answer.headers) });
}

export function decodeHttpRelayAnswer(payload: Uint8Array): HttpRelayAnswer | undefined {
  return decodeJson(HttpRelayAnswerSchema, payload);
}
