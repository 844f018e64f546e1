/** SERVER_DEFAULTS come from the packages' own defaults; these are the values SPEC and --help state. */
import { describe, expect, it } from 'vitest';
import { SERVER_DEFAULTS } from '../src/settings/options.js';

describe('SERVER_DEFAULTS', () => {
  it('keep the documented defaults of the packages they come from', () => {
    expect(SERVER_DEFAULTS).toMatchObject({
      port: 47372,
      invocationTimeoutMs: 15_000,
      heartbeatIntervalMs: 30_000,
      heartbeatTimeoutMs: 90_000,
      maxMessageBytes: 1_048_576,
      httpLoopLongPollTimeoutMs: 25_000,
      httpLoopIdleTimeoutMs: 10_000,
    });
  });
});
