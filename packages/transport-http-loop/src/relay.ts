/**
 * HTTP loop sessions behind a load balancer without stickiness (SPEC §16.7): a `/send`, `/poll` or
 * `/disconnect` that lands on a node which does not hold its session is passed to the node that does
 * (`LoopRelay`, which a server in a fleet makes from its bus), which answers it as if it had come
 * straight in (`answerRelayed` of the transport); the first node writes that answer back.
 *
 *   node A (request lands)                          node B (holds the session)
 *   session not here ──forward──────────────────────▶ answerRelayed ─▶ the same routes
 *     nobody holds it: 404 empty (disconnect: 204)     (a relayed request is never relayed again)
 *   poll: its client goes away,  ──/abandon <poll id>──▶ the waiting poll takes nothing
 *     or no answer came back                           (answered already: its message is put back)
 *   poll: 200 written, lost  ───/requeue <poll id>──▶ the message back at the head of the queue
 *
 * `x-mdp-relay-poll` names a relayed poll between the two nodes; clients' own `x-mdp-relay-*`
 * headers are dropped before a request is passed on. `/abandon` and `/requeue` exist only on
 * relayed requests, never over HTTP.
 */
import type { BodyResult, HeaderMap } from '@mdp/core';
import type { PollConnection } from './mailbox.js';
import { queryValues } from './query.js';
import type { LoopRequest } from './routes.js';
import { SESSION_ID_HEADER } from './session-id.js';

/** An HTTP loop request as it travels to the node that holds its session. */
export interface RelayedRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Path below the mount point and query, e.g. `/poll?waitMs=20000`. */
  readonly target: string;
  /** Request headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The holder's answer. `body` empty: no body. */
export interface RelayedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** How a relay ended; `unknown`: no node holds the session. */
export type RelayOutcome =
  | { readonly ok: true; readonly answer: RelayedAnswer }
  | {
      readonly ok: false;
      readonly reason: 'unknown' | 'not_ready' | 'timeout' | 'too_large' | 'failed';
      readonly message: string;
      /** With `not_ready`: when to try again, ms. */
      readonly retryAfterMs?: number;
    };

/** What a transport needs to take part in a fleet. A server makes one from its bus. */
export interface LoopRelay {
  /**
   * Session `sessionId` was opened here: resolve once the other nodes can reach it (the client may
   * send its next request anywhere). A rejection is logged; the session then works on this node only.
   */
  hold(sessionId: string): Promise<void>;
  /** The session ended here. */
  release(sessionId: string): void;
  /** Pass `request` to the node holding `sessionId`. Never rejects. */
  forward(sessionId: string, request: RelayedRequest, options: { readonly timeoutMs: number; readonly signal?: AbortSignal }): Promise<RelayOutcome>;
}

/** Names a relayed poll between two nodes. */
export const RELAY_POLL_HEADER = 'x-mdp-relay-poll';
/** Time a relayed poll may wait beyond its `waitMs` for the holder's answer, ms. */
export const RELAY_POLL_MARGIN_MS = 5000;
/** Time a relayed send or disconnect (and an abandon or requeue) waits for the holder, ms. */
export const RELAY_TIMEOUT_MS = 10_000;
/** How long the holder keeps a relayed poll's message for a requeue, ms, and how many at most. */
const DELIVERY_KEPT_MS = 30_000;
const DELIVERIES_KEPT = 10_000;

/** The headers of `map` as plain strings, without the relay's own (a client may not set them). */
export function relayHeaders(map: HeaderMap): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) {
    if (value === undefined || name.startsWith('x-mdp-relay-')) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

/** A relayed request as the routes read it, on the node that holds its session. */
export class RelayedLoopRequest implements LoopRequest {
  readonly method: string;
  readonly sessionHeader: string | undefined;
  /** Remote addresses count only at connect, which is never relayed. */
  readonly secure = false;
  readonly relayed = true;
  private readonly search: string;

  constructor(
    private readonly request: RelayedRequest,
    private readonly poll: PollConnection,
  ) {
    this.method = request.method;
    this.sessionHeader = request.headers[SESSION_ID_HEADER];
    const mark = request.target.indexOf('?');
    this.search = mark < 0 ? '' : request.target.slice(mark + 1);
  }

  query(name: string): readonly string[] | undefined {
    return queryValues(this.search, name);
  }

  headers(): HeaderMap {
    return this.request.headers;
  }

  async readBody(maxBytes: number): Promise<BodyResult> {
    if (Buffer.byteLength(this.request.body) > maxBytes) return { ok: false, status: 413, error: `Request body exceeds ${maxBytes} bytes` };
    return { ok: true, text: this.request.body };
  }

  connection(): PollConnection {
    return this.poll;
  }

  remoteAddress(): undefined {
    return undefined;
  }
}

interface WaitingPoll {
  gone: boolean;
  readonly listeners: Set<() => void>;
}

/**
 * The holder's side of relayed polls: their connections (gone when the relaying node's client went
 * away, or the relay itself was cut), and the messages they carried, kept a while for a requeue.
 * No timer: kept deliveries are pruned as new ones come.
 */
export class RelayedPolls {
  private readonly waiting = new Map<string, WaitingPoll>();
  /** Poll id → put the message back; insertion order is age. */
  private readonly delivered = new Map<string, { readonly at: number; readonly putBack: () => void }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The connection of relayed poll `pollId` (undefined: no id), gone too when `signal` aborts. */
  connection(pollId: string | undefined, signal: AbortSignal): PollConnection {
    const poll: WaitingPoll = { gone: signal.aborted, listeners: new Set() };
    if (pollId !== undefined) this.waiting.set(pollId, poll);
    const gone = (): void => this.gone(poll);
    signal.addEventListener('abort', gone, { once: true });
    return {
      isLive: () => !poll.gone,
      onGone(listener) {
        if (poll.gone) {
          listener();
          return () => undefined;
        }
        poll.listeners.add(listener);
        return () => poll.listeners.delete(listener);
      },
    };
  }

  /** The relayed poll `pollId` was answered; `putBack` requeues the message it carried, if any. */
  ended(pollId: string | undefined, putBack: (() => void) | undefined): void {
    if (pollId === undefined) return;
    this.waiting.delete(pollId);
    if (!putBack) return;
    const now = this.now();
    for (const [id, kept] of this.delivered) {
      if (now - kept.at < DELIVERY_KEPT_MS && this.delivered.size < DELIVERIES_KEPT) break;
      this.delivered.delete(id);
    }
    this.delivered.set(pollId, { at: now, putBack });
  }

  /**
   * The relaying node's client went away before the poll's answer reached it. Still waiting: the
   * poll takes nothing. Answered already (the answer crossed the abandon and was dropped there):
   * its message was never written, so it goes back to the head of the queue.
   */
  abandon(pollId: string): void {
    const poll = this.waiting.get(pollId);
    if (poll) this.gone(poll);
    else this.requeue(pollId);
  }

  /** The relaying node could not write the message to its client: it goes back to the head of the queue. */
  requeue(pollId: string): void {
    const kept = this.delivered.get(pollId);
    if (!kept) return;
    this.delivered.delete(pollId);
    if (this.now() - kept.at < DELIVERY_KEPT_MS) kept.putBack();
  }

  get size(): number {
    return this.waiting.size + this.delivered.size;
  }

  private gone(poll: WaitingPoll): void {
    if (poll.gone) return;
    poll.gone = true;
    for (const listener of [...poll.listeners]) listener();
    poll.listeners.clear();
  }
}
