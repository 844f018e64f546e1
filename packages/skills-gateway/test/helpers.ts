/**
 * Test doubles: a client on a fake SessionTransport that answers each callClient synchronously
 * (or not at all), registered on a real Router. No sockets.
 */
import type { Router, Session, SessionTransport } from '@mdp/core';
import type { AuthContext, CallClientMessage, ClientDescriptor, PathDescriptor, SerializedError, ServerToClientMessage } from '@mdp/protocol';
import type { SkillReadRequest } from '../src/index.js';

/** What the fake client answers a call with; `undefined` means it never answers. */
export type Reply = { ok: true; data?: unknown } | { ok: false; error?: SerializedError } | undefined;

export class FakeClient implements SessionTransport {
  readonly kind = 'fake';
  readonly calls: CallClientMessage[] = [];
  reply: (call: CallClientMessage) => Reply = (call) => ({ ok: true, data: `skill at ${call.path}` });
  private bound: Session | undefined;

  get session(): Session {
    if (!this.bound) throw new Error('not connected');
    return this.bound;
  }

  bind(session: Session): void {
    this.bound = session;
  }

  send(message: ServerToClientMessage): void {
    if (message.type !== 'callClient') return;
    this.calls.push(message);
    const reply = this.reply(message);
    if (reply) this.session.handle({ type: 'callClientResult', requestId: message.requestId, ...reply });
  }

  close(): void {}

  get lastCall(): CallClientMessage {
    const call = this.calls.at(-1);
    if (!call) throw new Error('no callClient was sent');
    return call;
  }
}

/** Open a session on a fake transport and register client `id` with `paths`. */
export function connectClient(router: Router, id: string, paths: PathDescriptor[], extra: Partial<ClientDescriptor> = {}): FakeClient {
  const client = new FakeClient();
  client.bind(router.openSession(client));
  client.session.handle({ type: 'registerClient', client: { id, name: `Client ${id}`, paths, ...extra } });
  return client;
}

export const skill = (path: string, extra: Record<string, unknown> = {}): PathDescriptor => ({ type: 'skill', path, ...extra });

export function readRequest(pathname: string, init: Partial<Omit<SkillReadRequest, 'pathname'>> = {}): SkillReadRequest {
  return { method: 'GET', pathname, query: {}, headers: {}, auth: undefined as AuthContext | undefined, ...init };
}
