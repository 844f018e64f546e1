/**
 * An HTTP request and its answer as relay payloads, for HTTP loop sessions behind a load balancer
 * without stickiness (SPEC §16): the node a `/send`, `/poll` or `/disconnect` lands on relays it to
 * the node that holds the session (`relayToSession`), which answers it as if it had come straight
 * in; the first node writes the answer back. Bodies are text (the HTTP loop's are JSON). What the
 * node that answers needs of the request is carried; hop-by-hop headers are not.
 *
 * A payload is one line of JSON (method, target, headers; or status, headers), a new line, then
 * the body's own UTF-8 bytes. The body is not put in the JSON: escaping its quotes and backslashes
 * would let a body the HTTP loop accepts (up to `--max-message-bytes`) grow past what the bus
 * carries (that plus ENVELOPE_BYTES), up to twice its size. JSON text never holds a raw new line,
 * so the first one ends it.
 */
import * as v from 'valibot';
import { StringRecordSchema } from '@mdp/protocol';
import { decodeJson, encodeJson } from './protocol.js';

const NEW_LINE = 0x0a;

const HttpRelaySchema = v.object({
  method: v.pipe(v.string(), v.regex(/^[A-Z]{1,16}$/)),
  /** Path and query as the client sent them (origin form). */
  target: v.pipe(v.string(), v.startsWith('/'), v.maxLength(8192)),
  headers: StringRecordSchema,
});
export type HttpRelayRequest = v.InferOutput<typeof HttpRelaySchema> & { readonly body: string };

const HttpRelayAnswerSchema = v.object({
  status: v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(599)),
  headers: StringRecordSchema,
});
export type HttpRelayAnswer = v.InferOutput<typeof HttpRelayAnswerSchema> & { readonly body: string };

/** Headers that belong to one connection and must not be passed on (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'host']);

function endToEnd(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name.toLowerCase())) out[name.toLowerCase()] = value;
  return out;
}

/** `head` as one line of JSON, a new line, then `body`. */
function frame(head: unknown, body: string): Uint8Array {
  const json = encodeJson(head);
  const text = Buffer.from(body, 'utf8');
  const out = new Uint8Array(json.length + 1 + text.length);
  out.set(json, 0);
  out[json.length] = NEW_LINE;
  out.set(text, json.length + 1);
  return out;
}

/** The head (checked against `schema`) and body of a framed payload, or undefined when it is not one. */
function unframe<S extends v.GenericSchema>(schema: S, payload: Uint8Array): { head: v.InferOutput<S>; body: string } | undefined {
  const end = payload.indexOf(NEW_LINE);
  if (end < 0) return undefined;
  const head = decodeJson(schema, payload.subarray(0, end));
  if (head === undefined) return undefined;
  return { head, body: Buffer.from(payload.buffer, payload.byteOffset + end + 1, payload.length - end - 1).toString('utf8') };
}

export function encodeHttpRelay(request: HttpRelayRequest): Uint8Array {
  return frame({ method: request.method, target: request.target, headers: endToEnd(request.headers) }, request.body);
}

/** The request in a relay payload, or undefined when it is not one. */
export function decodeHttpRelay(payload: Uint8Array): HttpRelayRequest | undefined {
  const framed = unframe(HttpRelaySchema, payload);
  return framed && { ...framed.head, body: framed.body };
}

export function encodeHttpRelayAnswer(answer: HttpRelayAnswer): Uint8Array {
  return frame({ status: answer.status, headers: endToEnd(answer.headers) }, answer.body);
}

export function decodeHttpRelayAnswer(payload: Uint8Array): HttpRelayAnswer | undefined {
  const framed = unframe(HttpRelayAnswerSchema, payload);
  return framed && { ...framed.head, body: framed.body };
}
