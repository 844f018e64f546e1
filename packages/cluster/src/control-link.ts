/**
 * One control websocket to a peer (SPEC §10): the hello exchange, JSON framing and validation.
 * The dialing side speaks first; the accepting side checks that hello and answers with its own.
 * A link is `open` once both hellos were accepted; anything that breaks the rules closes it with
 * 1008 (policy) or 1003 (binary), and nothing here ever throws into the event loop.
 */
import type { RawData, WebSocket } from 'ws';
import { DEFAULT_MAX_MESSAGE_BYTES, closeReason, type Logger } from '@mdp/core';
import { CLOSE_CODES, parseClusterMessage, type ClusterHello, type ClusterMessage, type ClusterRpcResponse, type SerializedError } from '@mdp/protocol';
import { BACKLOG_DEFAULTS, Backlog, unsentBytes, type BacklogLimits } from './backlog.js';

export const LINK_CLOSE = {
  normal: { code: CLOSE_CODES.normal, reason: 'Closing' },
  goingAway: { code: CLOSE_CODES.goingAway, reason: 'Server shutting down' },
  binary: { code: CLOSE_CODES.unsupportedData, reason: 'Binary frames are not accepted' },
  policy: CLOSE_CODES.policyViolation,
  duplicate: { code: CLOSE_CODES.policyViolation, reason: 'Duplicate control link' },
  /** The peer left more than the byte cap unread for its stall time (backlog.ts). */
  notReading: CLOSE_CODES.tryAgainLater,
  /** The node's in-flight budget needed the room of a frame the peer left unfinished. */
  tryAgainLater: CLOSE_CODES.tryAgainLater,
} as const;

export type LinkState = 'handshake' | 'open' | 'closed';

export interface ControlLinkHooks {
  /** Our hello, built fresh for each link, addressed to the peer (its id, when known). */
  hello(to: string | undefined): ClusterMessage;
  /** Why the peer's hello is refused, or undefined to accept it. */
  check(hello: ClusterHello, link: ControlLink): string | undefined;
  onOpen(link: ControlLink): void;
  onMessage(link: ControlLink, message: ClusterMessage): void;
  onAlive(link: ControlLink): void;
  onClose(link: ControlLink, code: number, reason: string): void;
}

let nextLinkId = 1;

export class ControlLink {
  readonly id = nextLinkId++;
  state: LinkState = 'handshake';
  peerId: string | undefined;
  peerHello: ClusterHello | undefined;
  lastHeardAt: number;
  /** Why we closed it, when we did: a refusal here is not a network failure. */
  closedBecause: string | undefined;
  private readonly backlog: Backlog;

  constructor(
    private readonly ws: WebSocket,
    readonly direction: 'in' | 'out',
    readonly url: string | undefined,
    /** For a dialled link, the server id the address was dialled as. */
    readonly expectedPeerId: string | undefined,
    private readonly hooks: ControlLinkHooks,
    private readonly now: () => number,
    private readonly logger: Logger,
    limits: BacklogLimits = BACKLOG_DEFAULTS,
    /** Largest frame the peer takes (its `maxPayloadBytes`, the same default as ours); a larger one would close the link (1009). */
    private readonly maxFrameBytes: number = DEFAULT_MAX_MESSAGE_BYTES,
  ) {
    this.lastHeardAt = now();
    this.backlog = new Backlog(limits, now);
    ws.on('message', (data, isBinary) => this.guard('message', () => this.receive(data, isBinary)));
    ws.on('pong', () =>
      this.guard('pong', () => {
        this.lastHeardAt = this.now();
        if (this.state === 'open') this.hooks.onAlive(this);
      }),
    );
    ws.on('error', (error) => this.logger.debug('cluster.link_error', { link: this.describe(), error: error.message }));
    ws.on('close', (code, reason) => this.guard('close', () => this.closed(code, reason.toString())));
    if (direction === 'out') {
      ws.on('open', () => this.guard('open', () => this.sendRaw(this.hooks.hello(this.expectedPeerId))));
    }
  }

  /** Run a handler; an exception is logged and costs only this link, never the process. */
  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.logger.error('cluster.link_handler_failed', { what, link: this.describe(), error });
      this.terminate();
    }
  }

  private describe(): string {
    return `${this.direction}:${this.peerId ?? this.url ?? '?'}#${this.id}`;
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.state === 'closed') return;
    this.lastHeardAt = this.now();
    if (isBinary) return this.close(LINK_CLOSE.binary.code, LINK_CLOSE.binary.reason);
    let json: unknown;
    try {
      json = JSON.parse(rawText(data));
    } catch {
      return this.close(LINK_CLOSE.policy, 'Frame is not JSON');
    }
    const parsed = parseClusterMessage(json);
    if (!parsed.ok) return this.close(LINK_CLOSE.policy, `Invalid cluster message: ${parsed.error}`);
    const message = parsed.value;
    if (this.state === 'handshake') return this.handshake(message);
    if (message.serverId !== this.peerId || message.clusterId !== this.peerHello?.clusterId) {
      return this.close(LINK_CLOSE.policy, 'Message from another server id or cluster');
    }
    if (message.type === 'clusterHello') return; // a repeated hello carries nothing new for us
    this.hooks.onMessage(this, message);
  }

  private handshake(message: ClusterMessage): void {
    if (message.type !== 'clusterHello') return this.close(LINK_CLOSE.policy, 'Expected clusterHello first');
    // A dialled address must answer as the server it was dialled as (what its /mdp/meta said).
    if (this.expectedPeerId !== undefined && message.serverId !== this.expectedPeerId) {
      return this.close(LINK_CLOSE.policy, `Dialled ${this.expectedPeerId}, answered by ${message.serverId}`);
    }
    const refusal = this.hooks.check(message, this);
    if (refusal) return this.close(LINK_CLOSE.policy, refusal);
    this.peerId = message.serverId;
    this.peerHello = message;
    if (this.direction === 'in') this.sendRaw(this.hooks.hello(message.serverId));
    if (this.state !== 'handshake') return; // the hello could not be sent
    this.state = 'open';
    this.hooks.onOpen(this);
  }

  send(message: ClusterMessage): boolean {
    if (this.state !== 'open') return false;
    return this.sendRaw(message);
  }

  private sendRaw(message: ClusterMessage): boolean {
    if (this.ws.readyState !== this.ws.OPEN) return false;
    let text: string;
    try {
      text = JSON.stringify(message);
    } catch (error) {
      // A message carrying a client's data nested too deeply to serialise: that message is lost,
      // the link is fine.
      this.logger.warn('cluster.message_unsendable', { link: this.describe(), type: message.type, error });
      return false;
    }
    // A frame the peer would refuse (1009, and the link with it) is not sent: an answer goes as an
    // error saying so, at once, rather than breaking the link each time it is asked for.
    if (text.length > this.maxFrameBytes / 3 && Buffer.byteLength(text) > this.maxFrameBytes) {
      const bytes = Buffer.byteLength(text);
      this.logger.warn('cluster.message_too_large', { link: this.describe(), type: message.type, bytes, limit: this.maxFrameBytes });
      if (message.type !== 'clusterRpcResponse') return false;
      text = failedAnswer(message, tooLargeError(bytes, this.maxFrameBytes));
    }
    const waiting = this.ws.bufferedAmount;
    const verdict = this.backlog.verdict(waiting, text.length, message.type === 'clusterRpcResponse', unsentBytes(this.ws));
    if (verdict === 'drop') {
      this.dropSlow(waiting + text.length);
      return false;
    }
    // An answer the peer asked for faster than it reads: a short refusal goes instead.
    if (verdict === 'refuse' && message.type === 'clusterRpcResponse') {
      this.logger.debug('cluster.link_behind', { link: this.describe(), waiting });
      text = failedAnswer(message, this.backlog.behindError(waiting));
    }
    try {
      this.ws.send(text);
      return true;
    } catch (error) {
      this.logger.debug('cluster.link_send_failed', { link: this.describe(), error });
      this.terminate();
      return false;
    }
  }

  /**
   * The error an answer to the peer would be refused with now (backlog.ts `refusing`), or undefined:
   * a request of a peer that is behind is answered with it before any work is done for it.
   */
  refusal(): SerializedError | undefined {
    const waiting = this.ws.bufferedAmount;
    return this.state === 'open' && this.backlog.refusing(waiting, unsentBytes(this.ws)) ? this.backlog.behindError(waiting) : undefined;
  }

  ping(): void {
    if (this.state === 'closed' || this.ws.readyState !== this.ws.OPEN) return;
    if (this.backlog.stalled(this.ws.bufferedAmount, unsentBytes(this.ws))) return this.dropSlow(this.ws.bufferedAmount);
    try {
      this.ws.ping();
    } catch {
      this.terminate();
    }
  }

  /** Close with a status the peer will see; the link is closed for us at once. */
  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.closedBecause = reason;
    try {
      this.ws.close(code, closeReason(reason));
    } catch {
      this.ws.terminate();
    }
    this.closed(code, reason);
  }

  /**
   * The peer has not read for its stall time with more than the cap unread: the socket goes at once
   * (a close frame would wait behind what it does not read), and with it what waits for it.
   */
  private dropSlow(waiting: number): void {
    const reason = this.backlog.reason(waiting);
    this.logger.warn('cluster.link_not_reading', { link: this.describe(), waiting });
    this.closedBecause = reason;
    if (this.state === 'closed') return this.ws.terminate();
    this.ws.terminate();
    this.closed(LINK_CLOSE.notReading, reason);
  }

  /** Drop the connection without a closing handshake, as a dying process would. */
  terminate(): void {
    if (this.state === 'closed') {
      this.ws.terminate();
      return;
    }
    this.closedBecause ??= 'terminated';
    this.ws.terminate();
    this.closed(1006, 'terminated');
  }

  private closed(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.hooks.onClose(this, code, reason);
  }
}

/** The same answer frame (its cluster, server id, term and time) with `error` for its result. */
function failedAnswer(message: ClusterRpcResponse, error: SerializedError): string {
  const { result: _result, ...response } = message;
  return JSON.stringify({ ...response, ok: false, error });
}

/** The error that replaces an answer too large for one cluster frame. */
function tooLargeError(bytes: number, limit: number): { code: 'transport_error'; message: string } {
  return {
    code: 'transport_error',
    message: `The answer (${bytes} bytes) is larger than a cluster link carries (${limit} bytes); ask for less (a clientId, search or depth), or ask the leader itself`,
  };
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
