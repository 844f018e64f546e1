/**
 * An MDP client without a socket: a `SessionTransport` registered straight on a router, which
 * records the calls it gets and answers them as the test scripts.
 */
import type { Router, Session, SessionTransport } from '@mdp/core';
import type { AuthContext, CallClientMessage, ClientDescriptor, SerializedError, ServerToClientMessage } from '@mdp/protocol';
import { Changes } from './waiters.js';

/** What a fake client answers a call with; `undefined`: it never answers. */
export type Reply = { readonly ok: true; readonly data?: unknown } | { readonly ok: false; readonly error?: SerializedError } | undefined;

export interface FakeClientOptions {
  /** The answer to each call. Default `{ ok: true, data: 'content of <path>' }`. */
  readonly reply?: (call: CallClientMessage) => Reply;
  /**
   * Answer on a later turn of the event loop, as a client across a socket does. Default: at once,
   * from inside the router's send (so a test on fake timers needs no turn of the loop).
   */
  readonly later?: boolean;
  /** The transport kind listings show. Default `fake`. */
  readonly kind?: string;
  /** The transport auth of its session. */
  readonly auth?: AuthContext;
  /** Whether the router pings it (it never answers a ping). Default false. */
  readonly wantsPing?: boolean;
}

export class FakeClient implements SessionTransport {
  readonly kind: string;
  readonly wantsPing: boolean;
  /** Every callClient it got, in order. */
  readonly calls: CallClientMessage[] = [];
  /** The close codes and reasons core gave it. */
  readonly closes: { code: number; reason: string }[] = [];
  /** Fires after each call it gets (to wait on with `until`). */
  readonly changes = new Changes();
  reply: (call: CallClientMessage) => Reply;
  private readonly later: boolean;
  private bound: Session | undefined;

  constructor(options: FakeClientOptions = {}) {
    this.kind = options.kind ?? 'fake';
    this.wantsPing = options.wantsPing ?? false;
    this.reply = options.reply ?? ((call) => ({ ok: true, data: `content of ${call.path}` }));
    this.later = options.later ?? false;
  }

  get session(): Session {
    if (!this.bound) throw new Error('the fake client has no session');
    return this.bound;
  }

  /** Open its session on `router`. */
  open(router: Router, auth?: AuthContext): this {
    this.bound = router.openSession(this, auth);
    return this;
  }

  send(message: ServerToClientMessage): void {
    if (message.type !== 'callClient') return;
    this.calls.push(message);
    const reply = this.reply(message);
    if (reply) {
      const answer = (): void => {
        if (!this.session.closed) this.session.handle({ type: 'callClientResult', requestId: message.requestId, ...reply });
      };
      if (this.later) setImmediate(answer);
      else answer();
    }
    this.changes.emit();
  }

  close(code: number, reason: string): void {
    this.closes.push({ code, reason });
  }

  get lastCall(): CallClientMessage {
    const call = this.calls.at(-1);
    if (!call) throw new Error('no callClient was sent');
    return call;
  }

  /** The connection goes away: the router drops the client. */
  disconnect(reason?: string): void {
    this.session.end(reason);
  }
}

/** A fake client with a session on `router`, registered as `client` when one is given. */
export function fakeClient(router: Router, client?: ClientDescriptor, options: FakeClientOptions = {}): FakeClient {
  const fake = new FakeClient(options).open(router, options.auth);
  if (client) fake.session.handle({ type: 'registerClient', client });
  return fake;
}
