/**
 * Defaults of `NatsBusOptions`, in a module that does not import the NATS client: a program that
 * only shows them (a server's `--help`) need not load it.
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from '@mdp/core';
import { DIRECTORY_DEFAULTS } from './directory.js';

export const BUS_DEFAULTS = {
  prefix: 'mdp',
  ttlMs: DIRECTORY_DEFAULTS.ttlMs,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  callTimeoutMs: 15_000,
  requestTimeoutMs: 10_000,
  replicas: 1,
  reconnectWaitMs: 1000,
  connectTimeoutMs: 10_000,
} as const;
