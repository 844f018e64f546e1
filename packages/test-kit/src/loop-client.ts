/**
 * HTTP loop clients for tests: `loopClient` speaks the four routes over any fetch (in-process
 * `app.request` or a real socket), `LoopTestClient` is an MDP client on top of it that keeps a long
 * poll open and answers each `callClient`, as the SDKs do.
 */
import type { CallClientMessage, ClientDescriptor } from '@mdp/protocol';
import { resultOf, type CallHandler } from './answers.js';
import { descriptor, skill } from './descriptors.js';
import { track } from './stop.js';

/** A fetch of a path under the loop's mount (`/connect`, `/poll?…`). */
export type LoopFetch = (path: string, init?: RequestInit) => Response | Promise<Response>;

/** What `register()` registers by default: `c1` with a GET endpoint and a skill. */
export const LOOP_CLIENT: ClientDescriptor = descriptor('c1', [{ type: 'endpoint', method: 'GET', path: '/hello' }, skill('/docs/skill.md')], {
  name: 'Client one',
});

/** `loopFetch(base, fetch)`: the loop's routes under `base` (e.g. `http://127.0.0.1:1234/mdp/http-loop`). */
export function loopFetch(base: string, fetchFn: (url: string, init?: RequestInit) => Promise<Response> = fetch): LoopFetch {
  return (path, init) => fetchFn(`${base}${path}`, init);
}

export type LoopClient = ReturnType<typeof loopClient>;

/** The HTTP loop's routes, one request each. */
export function loopClient(fetchLike: LoopFetch) {
  const fetchFn = async (path: string, init?: RequestInit): Promise<Response> => fetchLike(path, init);
  return {
    fetch: fetchFn,
    /** `POST /connect`; resolves with the session id (throws unless 200). */
    async connect(init: RequestInit = {}): Promise<string> {
      const response = await fetchFn('/connect', { method: 'POST', ...init });
      if (response.status !== 200) throw new Error(`connect answered ${response.status}`);
      return ((await response.json()) as { sessionId: string }).sessionId;
    },
    /** `POST /send` of `{ message }`, the session id in its header. */
    send(sessionId: string, message: unknown, headers: Record<string, string> = {}): Promise<Response> {
      return fetchFn('/send', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId, ...headers },
        body: JSON.stringify({ message }),
      });
    },
    /** `GET /poll?sessionId=…&waitMs=…`. */
    poll(sessionId: string, waitMs?: number, init: RequestInit = {}): Promise<Response> {
      const query = new URLSearchParams({ sessionId });
      if (waitMs !== undefined) query.set('waitMs', String(waitMs));
      return fetchFn(`/poll?${query}`, init);
    },
    disconnect(sessionId: string, headers: Record<string, string> = {}): Promise<Response> {
      return fetchFn('/disconnect', { method: 'POST', headers: { 'x-mdp-session-id': sessionId, ...headers } });
    },
    /** Connect and register `client` (default {@link LOOP_CLIENT}); resolves with the session id once it applied (202). */
    async register(client: ClientDescriptor = LOOP_CLIENT, init: RequestInit = {}): Promise<string> {
      const sessionId = await this.connect(init);
      const response = await this.send(sessionId, { type: 'registerClient', client }, Object.fromEntries(new Headers(init.headers).entries()));
      if (response.status !== 202) throw new Error(`registerClient answered ${response.status}: ${await response.text()}`);
      return sessionId;
    },
  };
}

/** The message of a 200 poll (throws on any other status). */
export async function polledMessage(response: Response): Promise<Record<string, unknown>> {
  if (response.status !== 200) throw new Error(`poll answered ${response.status}`);
  return ((await response.json()) as { message: Record<string, unknown> }).message;
}

export interface LoopTestClientOptions {
  /** Headers on every request (credentials). */
  readonly headers?: Record<string, string>;
  /** How long each poll may wait, ms. Default 20000. */
  readonly waitMs?: number;
}

/** An MDP client over the HTTP loop: registered, it keeps one long poll open and answers each call with `handler`. */
export class LoopTestClient {
  readonly calls: CallClientMessage[] = [];
  /** Answers each callClient (the same contract as the websocket `TestClient`). Default: answers `'ok'`. */
  handler: CallHandler = () => 'ok';
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly polling: Promise<void>;

  private constructor(
    private readonly loop: LoopClient,
    readonly sessionId: string,
    private readonly headers: Record<string, string>,
    private readonly waitMs: number,
  ) {
    this.polling = this.pollLoop();
  }

  /**
   * Connect and register `client` over the loop mounted at `base` (its URL, or a {@link LoopFetch});
   * resolves once the server applied the registration. Stopped by `stopAll()`.
   */
  static async register(base: string | LoopFetch, client: ClientDescriptor, options: LoopTestClientOptions = {}): Promise<LoopTestClient> {
    const headers = options.headers ?? {};
    const loop = loopClient(typeof base === 'string' ? loopFetch(base) : base);
    const sessionId = await loop.register(client, { headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
    return track(new LoopTestClient(loop, sessionId, headers, options.waitMs ?? 20_000));
  }

  send(message: unknown): Promise<Response> {
    return this.loop.send(this.sessionId, message, this.headers);
  }

  private async pollLoop(): Promise<void> {
    while (!this.stopped) {
      let response: Response;
      try {
        response = await this.loop.poll(this.sessionId, this.waitMs, {
          headers: { 'x-mdp-session-id': this.sessionId, ...this.headers },
          signal: this.abort.signal,
        });
      } catch {
        return; // stopped, or the server went away
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        if (response.status === 204) continue;
        return; // the session is gone (404), or refused
      }
      const { message } = (await response.json()) as { message: Record<string, unknown> };
      if (message.type === 'ping') void this.send({ type: 'pong', timestamp: message.timestamp }).catch(() => undefined);
      if (message.type === 'callClient') void this.answer(message as unknown as CallClientMessage);
    }
  }

  private async answer(call: CallClientMessage): Promise<void> {
    this.calls.push(call);
    const result = await resultOf(call, this.handler);
    if (result) await this.send(result).catch(() => undefined);
  }

  /** Disconnect (the server drops the client) and stop polling. Idempotent. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.loop.disconnect(this.sessionId, this.headers).catch(() => undefined);
    this.abort.abort();
    await this.polling;
  }
}
