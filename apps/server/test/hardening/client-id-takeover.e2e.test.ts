/**
 * Issue 18, finding 3: any token holder could take over any client id: the first session was
 * closed 4000, reads went to the newcomer, and the newcomer received the first owner's readers'
 * credentials. Now a client id belongs to the principal that registered it: another principal is
 * refused (websocket 4403, HTTP loop 403) and the holder is untouched; the same principal still
 * replaces its own older session (4000). Without an auth policy any local process may register any
 * id, as the README's trust model says.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { startServer } from '../harness.js';
import { wsClientWithSkill } from './clients.js';

afterEach(stopAll);

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('a client id under an auth policy', () => {
  it("refuses another principal's registerClient on the websocket (4403) and keeps the owner serving", async () => {
    const t = await startServer({ authTokens: ['t1', 't2'] });
    const owner = await wsClientWithSkill(t.ws, 'owned', 'from the owner', bearer('t1'));
    const intruder = await TestClient.connect(t.ws, { headers: bearer('t2') });
    intruder.handler = () => 'from the intruder';
    intruder.send({ type: 'registerClient', client: descriptor('owned', [skill('/s/skill.md')]) });
    expect(await intruder.closed).toEqual({ code: 4403, reason: 'Client id held by another principal' });

    const read = await fetch(`${t.http}/skills/owned/s`, { headers: bearer('t1') });
    expect(await read.text()).toBe('from the owner');
    expect(owner.calls).toHaveLength(1);
    // The reader's token opened the read; under a policy it is never handed to the client.
    expect(owner.calls.at(-1)?.auth).toBeUndefined();
    expect(intruder.calls).toEqual([]);
  });

  it("refuses another principal's registerClient over the HTTP loop with 403 {error}", async () => {
    const t = await startServer({ authTokens: ['t1', 't2'] });
    await wsClientWithSkill(t.ws, 'owned', 'from the owner', bearer('t1'));
    const connected = await fetch(`${t.http}/mdp/http-loop/connect`, { method: 'POST', headers: bearer('t2') });
    const { sessionId } = (await connected.json()) as { sessionId: string };
    const refused = await fetch(`${t.http}/mdp/http-loop/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': sessionId, ...bearer('t2') },
      body: JSON.stringify({ message: { type: 'registerClient', client: descriptor('owned', [skill('/s/skill.md')]) } }),
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: 'Client id held by another principal' });
    expect(await (await fetch(`${t.http}/skills/owned/s`, { headers: bearer('t2') })).text()).toBe('from the owner');
  });

  it("lets the same principal's reconnect replace its old session (4000)", async () => {
    const t = await startServer({ authTokens: ['t1', 't2'] });
    const first = await wsClientWithSkill(t.ws, 'owned', 'first', bearer('t1'));
    await wsClientWithSkill(t.ws, 'owned', 'second', bearer('t1'));
    expect(await first.closed).toEqual({ code: 4000, reason: 'Replaced by newer client session' });
    expect(await (await fetch(`${t.http}/skills/owned/s`, { headers: bearer('t2') })).text()).toBe('second');
  });
});

describe('without an auth policy', () => {
  it('any local process may replace any client id (the documented trust model)', async () => {
    const t = await startServer();
    const first = await wsClientWithSkill(t.ws, 'shared', 'first');
    await wsClientWithSkill(t.ws, 'shared', 'second');
    expect((await first.closed).code).toBe(4000);
    expect(await (await fetch(`${t.http}/skills/shared/s`)).text()).toBe('second');
  });
});
