/**
 * Issue 18, finding 2: with an auth policy, an HTTP loop session id was a bearer credential on its
 * own: a party knowing only the id could send (forging answers), poll (reading callClients with the
 * readers' tokens) and disconnect the owner, with no token, a wrong one or another valid one. Now
 * every call after connect needs an accepted credential of the principal that connected: 401
 * otherwise, and the owner keeps working.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { descriptor, skill, stopAll } from '@mdp/test-kit';
import { startServer, type TestServer } from '../harness.js';

afterEach(stopAll);

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const loop = (t: TestServer, path: string): string => `${t.http}/mdp/http-loop${path}`;

async function connect(t: TestServer, token: string): Promise<string> {
  const res = await fetch(loop(t, '/connect'), { method: 'POST', headers: bearer(token) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { sessionId: string }).sessionId;
}

const send = (t: TestServer, sessionId: string, message: unknown, headers: Record<string, string>): Promise<Response> =>
  fetch(loop(t, '/send'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId, ...headers },
    body: JSON.stringify({ message }),
  });
const poll = (t: TestServer, sessionId: string, headers: Record<string, string>, waitMs = 0): Promise<Response> =>
  fetch(loop(t, `/poll?sessionId=${sessionId}&waitMs=${waitMs}`), { headers });
const disconnect = (t: TestServer, sessionId: string, headers: Record<string, string>): Promise<Response> =>
  fetch(loop(t, '/disconnect'), { method: 'POST', headers: { 'x-mdp-session-id': sessionId, ...headers } });

describe('an HTTP loop session under an auth policy', () => {
  it('refuses every step of a party that knows only the session id, and the owner keeps working', async () => {
    const t = await startServer({ authTokens: ['owner-token', 'other-token'] });
    const sessionId = await connect(t, 'owner-token');
    expect((await send(t, sessionId, { type: 'registerClient', client: descriptor('owned', [skill('/s/skill.md')]) }, bearer('owner-token'))).status).toBe(202);
    const reading = fetch(`${t.http}/skills/owned/s`, { headers: bearer('other-token') });

    for (const forged of [{}, bearer('wrong-token'), bearer('other-token')]) {
      const steps = [
        await poll(t, sessionId, forged),
        await send(t, sessionId, { type: 'callClientResult', requestId: 'guess', ok: true, data: 'forged' }, forged),
        await disconnect(t, sessionId, forged),
      ];
      for (const step of steps) {
        expect(step.status).toBe(401);
        expect(await step.json()).toEqual({ error: 'Unauthorized' });
      }
    }

    // The owner polls the reader's call (without the reader's server token: never forwarded) and answers.
    const polled = await poll(t, sessionId, bearer('owner-token'), 5000);
    expect(polled.status).toBe(200);
    const { message } = (await polled.json()) as { message: { requestId: string; auth: unknown } };
    expect(message.auth).toBeUndefined();
    expect((await send(t, sessionId, { type: 'callClientResult', requestId: message.requestId, ok: true, data: 'real' }, bearer('owner-token'))).status).toBe(
      202,
    );
    const read = await reading;
    expect(read.status).toBe(200);
    expect(await read.text()).toBe('real');
    expect(t.server.router.getClient('owned')?.sessionId).toBe(sessionId);
  });

  it("lets the same principal's new session replace its old one", async () => {
    const t = await startServer({ authTokens: ['owner-token'] });
    const first = await connect(t, 'owner-token');
    const register = { type: 'registerClient', client: descriptor('owned', [skill('/s/skill.md')]) };
    expect((await send(t, first, register, bearer('owner-token'))).status).toBe(202);
    const second = await connect(t, 'owner-token');
    expect((await send(t, second, register, bearer('owner-token'))).status).toBe(202);
    expect(t.server.router.getClient('owned')?.sessionId).toBe(second);
    expect((await poll(t, first, bearer('owner-token'))).status).toBe(404);
  });
});
