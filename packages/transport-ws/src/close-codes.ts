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
  /** Frame over the size limit (sent by `ws` itself when maxPayload is exceeded). */
  messageTooBig: 1009,
  /** Unexpected server error; the cause is logged, never echoed. */
  internalError: 1011,
  /**
   * Try again later: the peer does not read what it is sent (more than `maxBufferedBytes` waiting),
   * or it changes its catalog faster than the limit.
   */
  tryAgainLater: 1013,
  /** The server's auth policy refused the upgrade's credential (*beyond*, SPEC §7). */
  unauthorized: 4401,
  /** `registerClient` for an id another principal holds (SPEC §4); the holder is untouched. */
  clientIdTaken: 4403,
  /** No `registerClient` within `registerTimeoutMs` of the handshake. */
  registerTimeout: 4408,
} as const;

/** Close reasons must fit in a control frame: 123 bytes of UTF-8. */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= 123) return text;
  let cut = text.slice(0, 120);
  // Drop whole characters: a high surrogate left without its pair would be sent as U+FFFD.
  while (Buffer.byteLength(cut) > 120 || /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}...`;
}
