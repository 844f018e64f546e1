/** WS_CLOSE and closeFor: the close statuses of SPEC §4–§5, and the one mapping of failures to them. */
import { describe, expect, it } from 'vitest';
import { MdpError } from '@mdp/core';
import { WS_CLOSE } from '../src/index.js';
import { closeFor } from '../src/close-codes.js';

describe('WS_CLOSE', () => {
  it('names the statuses of SPEC §5', () => {
    expect(WS_CLOSE).toMatchObject({
      normal: 1000,
      goingAway: 1001,
      unsupportedData: 1003,
      policyViolation: 1008,
      messageTooBig: 1009,
      internalError: 1011,
    });
  });
});

describe('closeFor', () => {
  it('closes on core refusals with their status and message', () => {
    expect(closeFor(new MdpError('bad_request', 'Client id held by another principal', { refusal: 'client_id_taken' }))).toEqual({
      code: 4403,
      reason: 'Client id held by another principal',
    });
    expect(closeFor(new MdpError('bad_request', 'Too many catalog changes', { refusal: 'rate_limited' }))).toEqual({
      code: 1013,
      reason: 'Too many catalog changes',
    });
    expect(closeFor(new MdpError('bad_request', 'path must start with /'))).toEqual({ code: 1008, reason: 'path must start with /' });
    expect(closeFor(new MdpError('not_ready', 'The server holds 10 paths'))).toEqual({ code: 1013, reason: 'The server holds 10 paths' });
    expect(closeFor(new MdpError('bad_request', 'Catalog is over 10 bytes as JSON (maxCatalogBytes)', { refusal: 'too_large' }))).toEqual({
      code: 1009,
      reason: 'Catalog is over 10 bytes as JSON (maxCatalogBytes)',
    });
    expect(closeFor(new MdpError('bad_request', 'Too many clients from this address (maxClientsPerAddress 1)', { refusal: 'too_many_clients' }))).toEqual({
      code: 4429,
      reason: 'Too many clients from this address (maxClientsPerAddress 1)',
    });
  });

  it('closes 1011 on anything else, never echoing its message', () => {
    for (const thrown of [new Error('password=hunter2'), 'boom', undefined]) expect(closeFor(thrown)).toEqual({ code: 1011, reason: 'Internal error' });
  });
});
