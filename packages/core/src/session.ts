import { CLOSE_CODES, type AuthContext, type ServerToClientMessage } from '@mdp/protocol';

/**
 * What a transport hands to core for one connection. Core never knows whether it is a websocket,
 * an HTTP loop queue or a proxy link.
 */
export interface SessionTransport {
  /** Short name for logs and listings: `ws`, `http-loop`, `proxy`… */
  readonly kind: string;
  /** Deliver one message. Must not throw; a dead transport drops it (its session is closing). */
  send(message: ServerToClientMessage): void;
  /** Close the connection because core decided so (replaced, expired, shutdown). */
  close(code: number, reason: string): void;
  /** Whether core should send heartbeat pings on this transport (default true). */
  readonly wantsPing?: boolean;
  /** The connection is encrypted (TLS); listings report it. Default false. */
  readonly secure?: boolean;
  /**
   * The `Origin` of the web page that opened the connection (its upgrade or HTTP-loop connect);
   * `undefined` for programs that send none. Without an auth policy it is who holds the ids the
   * session registers (ownership.ts), and a page of that origin may read their skills.
   */
  readonly origin?: string;
  /**
   * The peer's remote address (`socket.remoteAddress`), if known: its clients count against the
   * router's `maxClientsPerAddress`. Leave it out for in-process sessions (not counted).
   */
  readonly remoteAddress?: string | undefined;
}

/** Why core closed a session, with the websocket close status each maps to. */
export const SESSION_CLOSE = {
  replaced: { code: CLOSE_CODES.replaced, reason: 'Replaced by newer client session' },
  /** A cluster member's client registered the id first, under another principal (ownership.ts). */
  heldByAnother: { code: CLOSE_CODES.clientIdTaken, reason: 'Client id held by another principal' },
  expired: { code: CLOSE_CODES.heartbeatTimeout, reason: 'Heartbeat timeout' },
  shutdown: { code: CLOSE_CODES.goingAway, reason: 'Server shutting down' },
} as const;

/**
 * A websocket close reason that fits in a control frame: 123 bytes of UTF-8 (RFC 6455 §5.5). A
 * longer one is cut to 120 bytes of whole characters and `...`, for every websocket edge.
 */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= 123) return text;
  let cut = text.slice(0, 120);
  // Drop whole characters: a high surrogate left without its pair would be sent as U+FFFD.
  while (Buffer.byteLength(cut) > 120 || /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}...`;
}

export type AuthSource = 'none' | 'message' | 'transport' | 'transport+message';

/** Read-only view of a session for transports and listings. */
export interface SessionInfo {
  readonly id: string;
  readonly transportKind: string;
  readonly clientId: string | undefined;
  readonly lastSeen: number;
  readonly transportAuth: AuthContext | undefined;
  readonly messageAuth: AuthContext | undefined;
  readonly closed: boolean;
  /** Calls that ended without this session's answer since it last answered a pending one. */
  readonly unansweredCalls: number;
}

export function authSourceOf(session: Pick<SessionInfo, 'transportAuth' | 'messageAuth'>): AuthSource {
  if (session.transportAuth) return session.messageAuth ? 'transport+message' : 'transport';
  return session.messageAuth ? 'message' : 'none';
}
