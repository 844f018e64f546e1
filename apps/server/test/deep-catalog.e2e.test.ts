/**
 * A catalog nested deeper than JSON.stringify can write back is refused where it arrives, with a
 * reason naming the field: close 1008 on the websocket, 400 on the HTTP loop. The listings keep
 * working for everyone else.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient, descriptor, stopAll } from '@mdp/test-kit';
import { registeredClient, registeredLoopClient, startServer } from './harness.js';

afterEach(async () => {
  await stopAll();
});

const DEPTH = 20_000;
const deep = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
const registerFrame = (id: string) =>
  `{"type":"registerClient","client":{"id":"${id}","name":"d","paths":[{"type":"endpoint","method":"POST","path":"/y","inputSchema":{"a":${deep}}}]}}`;

describe('a catalog nested too deep', () => {
  it('closes the websocket with 1008 naming the field; listings still answer', async () => {
    const t = await startServer();
    await registeredClient(t, descriptor('good', [{ type: 'endpoint', method: 'POST', path: '/x' }]));
    const evil = await TestClient.connect(t.ws);
    evil.sendRaw(registerFrame('deep'));
    expect(await evil.closed).toEqual({ code: 1008, reason: expect.stringContaining('client.paths.0.inputSchema: must not nest') });
    const clients = await fetch(`${t.http}/mdp/clients`);
    expect(clients.status).toBe(200);
    expect(((await clients.json()) as { clients: Array<{ id: string }> }).clients.map((c) => c.id)).toEqual(['good']);
    expect((await fetch(`${t.http}/mdp/paths`)).status).toBe(200);
  });

  it('answers an HTTP loop send with 400 naming the field', async () => {
    const t = await startServer();
    const loop = await registeredLoopClient(t, descriptor('loop', []));
    const res = await fetch(`${t.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': loop.sessionId },
      body: `{"message":${registerFrame('loop')}}`,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain(
      'message.client.paths.0.inputSchema: must not nest objects and arrays more than 64 levels deep',
    );
  });
});
