/**
 * Defaults of the transport's limits (`WebSocketTransportOptions`), in a module of their own that
 * imports nothing: a program that only shows them (a server's `--help`) need not load `ws`.
 */
export const WS_LIMIT_DEFAULTS = {
  maxBufferedBytes: 8 * 1024 * 1024,
  stallTimeoutMs: 5_000,
  registerTimeoutMs: 10_000,
  maxConnections: 10_000,
  maxConnectionsPerAddress: 8_000,
} as const;
