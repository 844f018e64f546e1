/**
 * Every websocket close status an MDP server sends, in one table: the client sessions' (the
 * websocket transport, SPEC §5), the cluster's control links' and the bus's alike. The reasons
 * that go with them live beside the code that closes.
 */
export const CLOSE_CODES = {
  /** Normal closure. */
  normal: 1000,
  /** The server is shutting down. */
  goingAway: 1001,
  /** A binary frame: only JSON text frames are accepted. */
  unsupportedData: 1003,
  /** A frame that is not JSON, an invalid message, a refused hello. */
  policyViolation: 1008,
  /** A frame over the size limit, or a catalog over a byte cap (the cap named in the reason). */
  messageTooBig: 1009,
  /** An unexpected server error; the cause is logged, never echoed. */
  internalError: 1011,
  /** Try again later: the peer does not read, changes its catalog too fast, or the server cannot take it now. */
  tryAgainLater: 1013,
  /** A newer session registered the same client id (SPEC §4). */
  replaced: 4000,
  /** No heartbeat answer within the time-out. */
  heartbeatTimeout: 4001,
  /** The auth policy refused the connection's credential (SPEC §7). */
  unauthorized: 4401,
  /** The client id is held by another principal (SPEC §4). */
  clientIdTaken: 4403,
  /** No `registerClient` in time after the handshake. */
  registerTimeout: 4408,
  /** Too many clients from one address. */
  tooManyClients: 4429,
} as const;

export type CloseCodeName = keyof typeof CLOSE_CODES;
