/** The one error type and its wire form. */
import { describe, expect, it } from 'vitest';
import { INTERNAL_ERROR, MAX_RETRY_AFTER_S, MdpError, httpStatusOf, retryAfterHeader, retryAfterSeconds, serializeError } from '../src/index.js';

describe('MdpError', () => {
  it('carries a stable code, details and cause', () => {
    const cause = new Error('socket reset');
    const error = new MdpError('transport_error', 'Client went away', { details: { clientId: 'a' }, cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('MdpError');
    expect(error.code).toBe('transport_error');
    expect(error.details).toEqual({ clientId: 'a' });
    expect(error.cause).toBe(cause);
    expect(error.toJSON()).toEqual({ code: 'transport_error', message: 'Client went away', details: { clientId: 'a' } });
    expect(JSON.parse(JSON.stringify(error))).toEqual(error.toJSON());
  });

  it('omits details when there are none', () => {
    expect(new MdpError('timeout', 'Too slow').toJSON()).toEqual({ code: 'timeout', message: 'Too slow' });
    expect('cause' in new MdpError('timeout', 'Too slow')).toBe(false);
  });
});

describe('serializeError', () => {
  it('keeps an MdpError', () => {
    expect(serializeError(new MdpError('not_found', 'No such client'))).toEqual({ code: 'not_found', message: 'No such client' });
  });

  it.each([new Error('password=hunter2'), 'string thrown', undefined, { code: 'bad_request', message: 'duck typed' }])(
    'never leaks the message of an unknown error (%j)',
    (thrown) => {
      expect(serializeError(thrown)).toBe(INTERNAL_ERROR);
      expect(INTERNAL_ERROR).toEqual({ code: 'handler_error', message: 'Internal error' });
    },
  );

  it('cannot be changed through what it returns', () => {
    expect(Object.isFrozen(serializeError(new Error('x')))).toBe(true);
  });
});

describe('httpStatusOf', () => {
  it('maps a failure of the server by its code (SPEC §12)', () => {
    const cases = [
      ['bad_request', 400],
      ['not_found', 404],
      ['timeout', 504],
      ['not_ready', 503],
      ['handler_error', 500],
      ['transport_error', 502],
      ['a_peer_code', 502],
    ] as const;
    for (const [code, status] of cases) expect(httpStatusOf({ code }), code).toBe(status);
    expect(httpStatusOf(INTERNAL_ERROR)).toBe(500);
  });

  it('answers 502 for any failure the client reported', () => {
    for (const code of ['bad_request', 'not_found', 'timeout', 'handler_error']) expect(httpStatusOf({ code }, 'client')).toBe(502);
  });

  it('maps a refusal before its code', () => {
    expect(httpStatusOf(new MdpError('bad_request', 'Client id held by another principal', { refusal: 'client_id_taken' }))).toBe(403);
    expect(httpStatusOf(new MdpError('bad_request', 'Too many catalog changes', { refusal: 'rate_limited', retryAfterMs: 500 }))).toBe(429);
    expect(httpStatusOf(new MdpError('bad_request', 'Catalog is over 10 bytes as JSON (maxCatalogBytes)', { refusal: 'too_large' }))).toBe(413);
    expect(httpStatusOf(new MdpError('bad_request', 'Too many clients from this address (maxClientsPerAddress 1)', { refusal: 'too_many_clients' }))).toBe(429);
    expect(httpStatusOf(new MdpError('bad_request', 'Bad catalog'))).toBe(400);
  });
});

describe('retryAfterSeconds and retryAfterHeader', () => {
  it('round a hint up to whole seconds, at least one', () => {
    expect(retryAfterSeconds(undefined)).toBe(1);
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
    expect(retryAfterHeader({ code: 'not_ready', message: 'busy', details: { retryAfterMs: 2500 } })).toEqual({ 'retry-after': '3' });
  });

  it('take a hint that is no finite number as none, and cap a long one: a peer cannot make the header nonsense', () => {
    // JSON.parse('1e400') is Infinity; a leader or a client could send it.
    const infinite = JSON.parse('{"retryAfterMs":1e400}') as { retryAfterMs: number };
    expect(retryAfterHeader({ code: 'not_ready', message: 'busy', details: infinite })).toEqual({ 'retry-after': '1' });
    expect(retryAfterSeconds(Number.NaN)).toBe(1);
    expect(retryAfterSeconds(-5000)).toBe(1);
    expect(retryAfterSeconds(1e12)).toBe(MAX_RETRY_AFTER_S);
    expect(retryAfterHeader({ code: 'not_ready', message: 'busy', details: { retryAfterMs: '9' } })).toEqual({ 'retry-after': '1' });
  });
});
