/**
 * Fleet nodes for tests: a bus with a table of local clients standing in for core. A client
 * answers each call with its `answer` function; events land in inboxes the tests wait on.
 */
import { createLogger, systemClock, type CallSignal, type InvokeOutcome } from '@mdp/core';
import type { ClientDescriptor } from '@mdp/protocol';
import { Inbox, descriptor as makeDescriptor, until } from '@mdp/test-kit';
import { createNatsBus, type BusStatus, type DirectoryChange, type NatsBus, type NatsBusOptions, type RemoteCall } from '../src/index.js';

export interface LocalTestClient {
  readonly descriptor: ClientDescriptor;
  answer: (call: RemoteCall, signal: CallSignal) => Promise<InvokeOutcome> | InvokeOutcome;
}

export interface TestNode {
  readonly id: string;
  readonly bus: NatsBus;
  readonly clients: Map<string, LocalTestClient>;
  readonly replaced: Inbox<{ clientId: string; byNode: string }>;
  readonly changes: Inbox<DirectoryChange>;
  readonly statuses: Inbox<BusStatus>;
  /** Calls this node's clients got, in order. */
  readonly calls: Inbox<{ clientId: string; call: RemoteCall }>;
  /** Register a client here and announce it. */
  add(id: string, answer?: LocalTestClient['answer'], principal?: string): LocalTestClient;
  remove(id: string): void;
  /** Resolves once this node sees `clientId` on `node` (or, with `undefined`, sees it nowhere). */
  sees(clientId: string, node: string | undefined): Promise<void>;
  close(): Promise<void>;
}

/**
 * TTL of test nodes, ms: short, so that death tests end soon, but with heartbeats (every TTL/3)
 * that survive a loaded CI machine's pauses without flapping.
 */
export const TEST_TTL_MS = 2000;

export const echo: LocalTestClient['answer'] = (call) => ({ ok: true, data: { path: call.path, body: call.body ?? null, query: call.query ?? null } });

export async function startNode(url: string | string[], id: string, options: Partial<NatsBusOptions> = {}): Promise<TestNode> {
  const clients = new Map<string, LocalTestClient>();
  const replaced = new Inbox<{ clientId: string; byNode: string }>();
  const changes = new Inbox<DirectoryChange>();
  const statuses = new Inbox<BusStatus>();
  const calls = new Inbox<{ clientId: string; call: RemoteCall }>();
  const bus = createNatsBus(
    {
      servers: url,
      nodeId: id,
      ttlMs: TEST_TTL_MS,
      reconnectWaitMs: 100,
      // MDP_TEST_BUS_LOG=debug shows what the nodes of a failing test did.
      ...(process.env['MDP_TEST_BUS_LOG'] ? { logger: createLogger({ level: 'debug', fields: { test: true } }) } : {}),
      ...options,
    },
    {
      call: async (clientId, call, { signal }) => {
        const client = clients.get(clientId);
        if (!client) return { ok: false, source: 'server', error: { code: 'not_found', message: 'no such client here' } };
        calls.push({ clientId, call });
        return client.answer(call, signal);
      },
      descriptor: (clientId) => clients.get(clientId)?.descriptor,
      replaced: (clientId, byNode) => {
        clients.delete(clientId);
        replaced.push({ clientId, byNode });
      },
      relay: async (payload) => Buffer.concat([Buffer.from(`${id}:`), payload]),
    },
  );
  bus.onStatus((status) => statuses.push(status));
  bus.onChange((list) => {
    for (const change of list) changes.push(change);
  });
  await bus.start();
  await statuses.seen((s) => s.type === 'ready');
  const node: TestNode = {
    id,
    bus,
    clients,
    replaced,
    changes,
    statuses,
    calls,
    add(clientId, answer = echo, principal) {
      const client = { descriptor: makeDescriptor(clientId), answer };
      clients.set(clientId, client);
      bus.announce({
        descriptor: client.descriptor,
        principal,
        registeredAt: systemClock.wallNow(),
        transport: 'websocket',
        secure: false,
        authSource: 'none',
      });
      return client;
    },
    remove(clientId) {
      clients.delete(clientId);
      bus.withdraw(clientId);
    },
    sees(clientId, holder) {
      return until(
        (change) => changes.subscribe(change),
        () => (holder === undefined ? bus.resolve(clientId) === undefined : bus.resolve(clientId)?.node === holder) || undefined,
      ).then(() => undefined);
    },
    close: () => bus.close(),
  };
  return node;
}
