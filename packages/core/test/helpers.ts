/**
 * Test doubles shared by the core tests: a fake SessionTransport that records what core sends and
 * how it closes, small builders for descriptors, and the test kit's manual clock. No sockets anywhere.
 */
import type { AuthContext, CallClientMessage, ClientDescriptor, EndpointMethod, PathDescriptor, ServerToClientMessage } from '@mdp/protocol';
import type { InvokeOutcome, Router, Session, SessionTransport } from '../src/index.js';

// The one manual clock of every package's tests. The test kit depends on core, so core cannot
// depend on it: its tests take the clock from the kit's source (it imports nothing at run time).
export { manualClock, settle, type ManualClock } from '../../test-kit/src/clock.js';

export class FakeTransport implements SessionTransport {
  readonly sent: ServerToClientMessage[] = [];
  readonly closes: { code: number; reason: string }[] = [];
  /** Called from close(); lets a test mimic a transport whose close event ends the session at once. */
  onClose: (() => void) | undefined;

  constructor(
    readonly kind: string = 'fake',
    readonly wantsPing?: boolean,
    readonly remoteAddress?: string,
  ) {}

  send(message: ServerToClientMessage): void {
    this.sent.push(message);
  }

  close(code: number, reason: string): void {
    this.closes.push({ code, reason });
    this.onClose?.();
  }

  get calls(): CallClientMessage[] {
    return this.sent.filter((m): m is CallClientMessage => m.type === 'callClient');
  }

  get lastCall(): CallClientMessage {
    const call = this.calls.at(-1);
    if (!call) throw new Error('no callClient was sent');
    return call;
  }

  ofType<T extends ServerToClientMessage['type']>(type: T): Extract<ServerToClientMessage, { type: T }>[] {
    return this.sent.filter((m): m is Extract<ServerToClientMessage, { type: T }> => m.type === type);
  }
}

export function endpoint(path: string, method: EndpointMethod = 'GET', extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'endpoint', path, method, ...extra };
}

export function skill(path: string, extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'skill', path, ...extra };
}

export function prompt(path: string, extra: Record<string, unknown> = {}): PathDescriptor {
  return { type: 'prompt', path, ...extra };
}

export function client(id: string, paths: PathDescriptor[] = [endpoint('/ping')], extra: Record<string, unknown> = {}): ClientDescriptor {
  return { id, name: `Client ${id}`, paths, ...extra };
}

export interface Connected {
  readonly session: Session;
  readonly transport: FakeTransport;
}

/** Open a session on a fresh fake transport. */
export function connect(
  router: Router,
  options: { kind?: string; auth?: AuthContext; wantsPing?: boolean; address?: string; principal?: string; peer?: string } = {},
): Connected {
  const transport = new FakeTransport(options.kind, options.wantsPing, options.address);
  const session = router.openSession(transport, options.auth, options.principal, options.peer);
  return { session, transport };
}

/** Open a session and register one client on it. */
export function connectClient(
  router: Router,
  id: string,
  paths?: PathDescriptor[],
  options: { kind?: string; auth?: AuthContext; messageAuth?: AuthContext; address?: string } = {},
): Connected {
  const connected = connect(router, options);
  connected.session.handle({ type: 'registerClient', client: client(id, paths), auth: options.messageAuth });
  return connected;
}

/** Track whether a promise has settled, without awaiting it (for "fails at once" checks). */
export function track(promise: Promise<InvokeOutcome>): { readonly settled: boolean; readonly outcome: InvokeOutcome | undefined } {
  const state: { settled: boolean; outcome: InvokeOutcome | undefined } = { settled: false, outcome: undefined };
  void promise.then((outcome) => {
    state.settled = true;
    state.outcome = outcome;
  });
  return state;
}

/** Let already-resolved promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await Promise.resolve();
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
