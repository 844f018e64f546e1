/**
 * HTTP loop requests and answers as relay payloads (http-relay.ts): a body the HTTP loop accepts
 * (up to `--max-message-bytes`) fits the bus (that plus ENVELOPE_BYTES) whatever characters it holds,
 * and comes out as it went in; anything that is not a relay payload is refused.
 */
import { describe, expect, it } from 'vitest';
import { decodeHttpRelay, decodeHttpRelayAnswer, encodeHttpRelay, encodeHttpRelayAnswer } from '../src/http-relay.js';
import { BUS_DEFAULTS, ENVELOPE_BYTES } from '../src/options.js';

/** A send body of about `bytes` bytes, mostly quotes and backslashes (each doubles when escaped in JSON). */
function heavyBody(bytes: number): string {
  const strings: string[] = [];
  let size = 30;
  while (size < bytes - 16) {
    strings.push('"\\');
    size += 9;
  }
  return JSON.stringify({ message: { type: 'callClientResult', requestId: 'r', ok: true, data: strings } });
}

describe('relay payloads', () => {
  it('carry a body of the largest message with little more than its own bytes', () => {
    const body = heavyBody(BUS_DEFAULTS.maxMessageBytes);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(BUS_DEFAULTS.maxMessageBytes);
    const headers = { 'x-mdp-session-id': 's-1', 'content-type': 'application/json', authorization: 'Bearer one' };
    const request = encodeHttpRelay({ method: 'POST', target: '/send', headers, body });
    expect(request.length).toBeLessThanOrEqual(BUS_DEFAULTS.maxMessageBytes + ENVELOPE_BYTES);
    expect(decodeHttpRelay(request)).toEqual({ method: 'POST', target: '/send', headers, body });

    const answer = encodeHttpRelayAnswer({ status: 200, headers: {}, body });
    expect(answer.length).toBeLessThanOrEqual(BUS_DEFAULTS.maxMessageBytes + ENVELOPE_BYTES);
    expect(decodeHttpRelayAnswer(answer)).toEqual({ status: 200, headers: {}, body });
  });

  it('keep any text, new lines and non-ASCII too, and drop hop-by-hop headers', () => {
    const body = 'line one\nline two\r\n\u00e9\u{1f600}\u0000';
    const request = decodeHttpRelay(encodeHttpRelay({ method: 'GET', target: '/poll?waitMs=1', headers: { Connection: 'close', Cookie: 'a=b' }, body }));
    expect(request).toEqual({ method: 'GET', target: '/poll?waitMs=1', headers: { cookie: 'a=b' }, body });
    expect(decodeHttpRelayAnswer(encodeHttpRelayAnswer({ status: 204, headers: {}, body: '' }))).toEqual({ status: 204, headers: {}, body: '' });
  });

  it('refuse what is not one', () => {
    const bytes = (text: string) => new TextEncoder().encode(text);
    for (const text of ['', 'nonsense', '{}', '{"method":"post","target":"/send","headers":{}}\n', '[1]\nx', '{"status":99,"headers":{}}\n']) {
      expect(decodeHttpRelay(bytes(text))).toBeUndefined();
      expect(decodeHttpRelayAnswer(bytes(text))).toBeUndefined();
    }
  });
});
