import { INTERNAL_ERROR, MdpError } from '@mdp/core';

/** Websocket close statuses this transport uses (SPEC §5), in one place. */
export const WS_CLOSE = {
  /** Normal closure. */
  normal: 1000,
  /** Server shutting down. */
  goingAway: 1001,
  /** Binary frame: only JSON text frames are accepted. */
  unsupportedData: 1003,
  /** Frame not JSON, invalid message, or a server-to-client type sent by the client. */
  policyViolation: 1008,
  /**
   * Frame over the size limit (sent by `ws` itself when maxPayload is exceeded), or a catalog over
   * a byte cap of core (a description, a schema, the catalog: `too_large`), the cap named in the reason.
   */
  messageTooBig: 1009,
  /** Unexpected server error; the cause is logged, never echoed. */
  internalError: 1011,
  /**
   * Try again later: the peer does not read what it is sent (more than `maxBufferedBytes` waiting),
   * it changes its catalog faster than the limit, or the server cannot take its catalog now
   * (`not_ready`: all catalogs together are at their limit).
   */
  tryAgainLater: 1013,
  /** The server's auth policy refused the upgrade's credential (*beyond*, SPEC §7). */
  unauthorized: 4401,
  /** `registerClient` for an id another principal holds (SPEC §4); the holder is untouched. */
  clientIdTaken: 4403,
  /** No `registerClient` within `registerTimeoutMs` of the handshake. */
  registerTimeout: 4408,
  /** `registerClient` from an address that holds core's `maxClientsPerAddress` clients already. */
  tooManyClients: 4429,
} as const;


/**
 * The close status and reason for a message that failed in core: its refusal's status (SPEC §4),
 * 1013 when the server is not ready for it, else 1008 with its message; anything but an `MdpError` is 1011 and keeps its cause to the log.
 */
export function closeFor(error: unknown): { readonly code: number; readonly reason: string } {
  if (!(error instanceof MdpError)) return { code: WS_CLOSE.internalError, reason: INTERNAL_ERROR.message };
  switch (error.refusal) {
    case 'client_id_taken':
      return { code: WS_CLOSE.clientIdTaken, reason: error.message };
    case 'rate_limited':
      return { code: WS_CLOSE.tryAgainLater, reason: error.message };
    case 'too_large':
      return { code: WS_CLOSE.messageTooBig, reason: error.message };
    case 'too_many_clients':
      return { code: WS_CLOSE.tooManyClients, reason: error.message };
    default:
      return { code: error.code === 'not_ready' ? WS_CLOSE.tryAgainLater : WS_CLOSE.policyViolation, reason: error.message };
  }
}
