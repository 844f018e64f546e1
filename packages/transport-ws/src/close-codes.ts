import { INTERNAL_ERROR, MdpError } from '@mdp/core';
import { CLOSE_CODES } from '@mdp/protocol';

/**
 * Websocket close statuses this transport uses (SPEC §5): the protocol's one table. 1009 is also
 * what `ws` itself sends for a frame over `maxPayload`.
 */
export const WS_CLOSE = CLOSE_CODES;

/**
 * The close status and reason for a message that failed in core: its refusal's status (SPEC §4),
 * 1013 when the server is not ready for it, else 1008 with its message; anything but an `MdpError` is 1011 and keeps its cause to the log.
 */
export function closeFor(error: unknown): { readonly code: number; readonly reason: string } {
  if (!(error instanceof MdpError)) return { code: WS_CLOSE.internalError, reason: INTERNAL_ERROR.message };
  switch (error.refusal) {
    case 'client_id_taken':
    case 'missing_scope':
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
