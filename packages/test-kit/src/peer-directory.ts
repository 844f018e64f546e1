/**
 * A fleet of routers in one process (SPEC §16, `remote.ts` of `@mdp/core`): node A's remote
 * directory reads node B's router, as a server's bus adapter does over NATS, so that a test reaches
 * B's clients through A's ways in without a NATS server. Imports nothing at run time (core's own
 * tests use it from source); the `not_ready` error a lost bus gives is made by `notReady`.
 */
import { createHash } from 'node:crypto';
import type { CallSignal, InvokeOutcome, RemoteChange, RemoteClient, RemoteDirectory, RemoteInvocation, Router } from '@mdp/core';
import type { ClientDescriptor } from '@mdp/protocol';

export interface PeerDirectoryOptions {
  /** The node id B's clients are announced under. Default `node-b`. */
  readonly node?: string;
  /** The error a catalog fetch rejects with while `down` (an MdpError `not_ready` with `details.retryAfterMs`). */
  readonly notReady: (message: string, retryAfterMs: number) => Error;
}

export class PeerDirectory implements RemoteDirectory {
  /** Catalog fetches, by client id. */
  readonly fetches: string[] = [];
  /** Calls sent to B, as they went. */
  readonly calls: RemoteInvocation[] = [];
  /** The bus is lost: fetches reject and calls fail with `not_ready` (retry in 2 s), as the bus does. */
  down = false;
  /** While set, every catalog fetch waits until `release()`. */
  held: Array<() => void> | undefined;
  /** What `registrationProblem` answers. */
  problem: string | undefined;
  private readonly node: string;

  constructor(
    private readonly peer: Router,
    private readonly options: PeerDirectoryOptions,
  ) {
    this.node = options.node ?? 'node-b';
  }

  resolve(clientId: string): RemoteClient | undefined {
    const info = this.peer.getClient(clientId);
    if (!info) return undefined;
    return {
      id: info.id,
      node: this.node,
      principal: info.principal,
      registeredAt: info.registeredAt,
      digest: createHash('sha256').update(JSON.stringify(info.descriptor)).digest('base64url').slice(0, 22),
      transport: info.transportKind,
      secure: info.secure,
      authSource: info.authSource,
    };
  }

  *list(): Iterable<RemoteClient> {
    for (const info of this.peer.listClients()) yield this.resolve(info.id) as RemoteClient;
  }

  async descriptor(clientId: string): Promise<ClientDescriptor | undefined> {
    this.fetches.push(clientId);
    if (this.held) await new Promise<void>((resolve) => this.held?.push(resolve));
    if (this.down) throw this.options.notReady('The fleet bus is down', 2000);
    return this.peer.getClient(clientId)?.descriptor;
  }

  /** Let the held fetches go on. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const resolve of held) resolve();
  }

  async call(clientId: string, call: RemoteInvocation, options: { timeoutMs: number; signal?: CallSignal }): Promise<InvokeOutcome> {
    this.calls.push(call);
    if (this.down) return { ok: false, source: 'server', error: { code: 'not_ready', message: 'bus down', details: { retryAfterMs: 2000 } } };
    return this.peer.invokeHere(clientId, call.method, call.path, {
      query: call.query,
      body: call.body,
      headers: call.headers,
      auth: call.auth,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      route: 'bus',
    });
  }

  onChange(listener: (changes: readonly RemoteChange[]) => void): () => void {
    return this.peer.onClientEvent((event) =>
      listener([event.type === 'unregistered' ? { kind: 'removed', clientId: event.clientId } : { kind: 'added', clientId: event.client.id }]),
    );
  }

  registrationProblem(): string | undefined {
    return this.problem;
  }
}
