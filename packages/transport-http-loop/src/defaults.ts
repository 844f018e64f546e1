/**
 * Defaults of `HttpLoopOptions`, in a module of their own: a program that only shows them (a
 * server's `--help`) need not load the transport.
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from '@mdp/core';

export const HTTP_LOOP_DEFAULTS = {
  longPollTimeoutMs: 25_000,
  maxBodyBytes: DEFAULT_MAX_MESSAGE_BYTES,
  maxSessions: 10_000,
  maxSessionsPerAddress: 2_000,
  maxQueuedMessages: 10_000,
  maxQueuedBytes: 8 * 1024 * 1024,
  idleTimeoutMs: 10_000,
} as const;
