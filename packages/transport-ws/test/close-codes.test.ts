/** WS_CLOSE: the close statuses of SPEC §5, in one table. */
import { describe, expect, it } from 'vitest';
import { WS_CLOSE } from '../src/index.js';

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
