/** The one error type and its wire form. */
import { describe, expect, it } from 'vitest';
import { MdpError, serializeError } from '../src/index.js';

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
      expect(serializeError(thrown)).toEqual({ code: 'handler_error', message: 'Internal error' });
    },
  );
});
