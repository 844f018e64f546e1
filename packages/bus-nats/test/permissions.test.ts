/**
 * The NATS permissions the README gives a node are enough for a fleet to work, and keep a node out
 * of another node's subjects. The nats-server runs with one user per node, each limited to the
 * subjects of the README's example (with this test's prefix and node tokens filled in).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { idToken } from '../src/index.js';
import { startNode, type TestNode } from './fleet.js';
import { NatsServer, natsServerAvailable, warnIfNoNatsServer } from './nats-server.js';

warnIfNoNatsServer('permissions.test');

const PREFIX = 'perm';

/** The README's permissions for node `nodeId` of fleet `prefix`, as a nats-server user. */
export function nodeUser(prefix: string, nodeId: string, password: string): string {
  const node = idToken(nodeId);
  const list = (subjects: string[]): string => subjects.map((s) => JSON.stringify(s)).join(', ');
  const streams = [`KV_${prefix}-nodes`, `KV_${prefix}-clients`];
  const publish = [
    `${prefix}.n.*.>`,
    `${prefix}.s.*`,
    `_INBOX_${prefix}.>`,
    `$KV.${prefix}-nodes.>`,
    `$KV.${prefix}-clients.>`,
    '$JS.API.INFO',
    ...streams.flatMap((stream) => [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.CREATE.${stream}`,
      `$JS.API.STREAM.MSG.GET.${stream}`,
      `$JS.API.DIRECT.GET.${stream}`,
      `$JS.API.DIRECT.GET.${stream}.>`,
      `$JS.API.CONSUMER.CREATE.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.INFO.${stream}.*`,
      `$JS.API.CONSUMER.DELETE.${stream}.*`,
      `$JS.FC.${stream}.>`,
    ]),
  ];
  const subscribe = [`${prefix}.n.${node}.>`, `${prefix}.s.*`, `_INBOX_${prefix}.${node}.>`];
  return `{ user: ${JSON.stringify(nodeId)}, password: ${JSON.stringify(password)}, permissions: { publish: { allow: [${list(publish)}] }, subscribe: { allow: [${list(subscribe)}] } } }`;
}

describe.skipIf(!natsServerAvailable())('a fleet under the README\u2019s NATS permissions', () => {
  let server: NatsServer;
  const nodes: TestNode[] = [];

  beforeAll(async () => {
    server = await NatsServer.start({
      config: `authorization { users = [ ${nodeUser(PREFIX, 'node-a', 'pa')}, ${nodeUser(PREFIX, 'node-b', 'pb')} ] }`,
    });
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.close()));
    await server?.dispose();
  });

  it('nodes limited to their own subjects announce, see, call and relay', async () => {
    const a = await startNode(server.url, 'node-a', { prefix: PREFIX, auth: { user: 'node-a', password: 'pa' } });
    nodes.push(a);
    const b = await startNode(server.url, 'node-b', { prefix: PREFIX, auth: { user: 'node-b', password: 'pb' } });
    nodes.push(b);
    a.add('c1');
    b.add('c2');
    await Promise.all([b.sees('c1', 'node-a'), a.sees('c2', 'node-b')]);
    expect(await b.bus.call('c1', { method: 'POST', path: '/p', body: 'x'.repeat(1024 * 1024) })).toMatchObject({ ok: true });
    expect(await a.bus.call('c2', { method: 'GET', path: '/q' })).toMatchObject({ ok: true });
    expect(await a.bus.descriptor('c2')).toMatchObject({ id: 'c2' });
    const release = await a.bus.holdSession('s-1', async (payload) => payload);
    expect(await b.bus.relayToSession('s-1', Buffer.from('hi'))).toMatchObject({ ok: true });
    release();
    expect(a.statuses.items.filter((s) => s.type === 'warning')).toEqual([]);
    expect(b.statuses.items.filter((s) => s.type === 'warning')).toEqual([]);
  });

  it('a node cannot listen on another node\u2019s subjects', async () => {
    const nc = await connect({ servers: server.url, user: 'node-a', pass: 'pa' });
    try {
      const errors: string[] = [];
      const done = (async () => {
        for await (const status of nc.status()) if (status.type === 'error') errors.push(status.error.message);
      })();
      nc.subscribe(`${PREFIX}.n.${idToken('node-b')}.>`);
      nc.subscribe(`_INBOX_${PREFIX}.${idToken('node-b')}.>`);
      await nc.flush();
      await nc.flush();
      expect(errors.join('\n')).toMatch(/permissions violation for subscription/i);
      void done;
    } finally {
      await nc.close();
    }
  });

  it('a wrong password is refused with a clear message at start', async () => {
    await expect(startNode(server.url, 'node-c', { prefix: PREFIX, auth: { user: 'node-a', password: 'wrong' } })).rejects.toThrow(
      /bus: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+: .*(auth|Authorization)/i,
    );
  });
});
