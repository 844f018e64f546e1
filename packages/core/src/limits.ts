/**
 * Largest MDP message or HTTP request body, bytes: 1 MiB (SPEC §5). The default of every edge that
 * reads one (websocket frames, HTTP loop, host API and MCP bodies, cluster links), so that what one
 * edge accepts the others accept too; the server's `maxMessageBytes` sets them all at once.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** What an outbound edge does with a message that would take its peer past its byte cap. */
export type OverCap = 'refuse' | 'hold' | 'close';

/**
 * The rule for a message that would take what a peer owes (bytes sent to it and not yet read) past
 * `maxBytes`, `owed` bytes with the message. A peer that made progress (read something) within
 * `stallMs` is behind, not gone: a call or an answer to it is refused (the one who asked may try
 * again soon; nothing more is queued), and other messages (pings, acknowledgements, catalogs: one
 * per event) are still held up to twice the cap. A peer that made none is closed, and so is one
 * owing twice the cap. The websocket transport and the cluster's links and mirrors share it.
 */
export function overCap(refusable: boolean, owed: number, maxBytes: number, sinceProgressMs: number, stallMs: number): OverCap {
  if (owed > 2 * maxBytes || sinceProgressMs >= stallMs) return 'close';
  return refusable ? 'refuse' : 'hold';
}
