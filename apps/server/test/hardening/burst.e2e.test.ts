/**
 * Issue 18, the probe after the first fixes (bugs A and B): a burst of legal reads larger than the
 * byte caps (skill reads with 14 KB headers, which each callClient carries twice) closed a healthy
 * websocket client with 1013, and ended a healthy HTTP loop session, before either could read it.
 * Under a policy any token holder could do that to another principal's client. Now the reads past
 * the cap are refused (503 with Retry-After, never sent) and the client goes on serving.
 */
import { Agent } from 'node:http';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { LoopTestClient, descriptor, skill, stopAll } from '@mdp/test-kit';
import { MB, startChild, stopChildren, type ChildServer } from './child.js';
import { read, wsClientWithSkill, type ReadResult } from './clients.js';

afterEach(async () => {
  await stopAll();
  await stopChildren();
});

const OWNER = { authorization: 'Bearer owner-token' };
const OTHER = { authorization: 'Bearer other-token' };
const POLICY = ['--auth-token', 'owner-token', '--auth-token', 'other-token'];

/** `count` reads of `id`'s skill at once, by the other token's holder, each with 14 KB of headers. */
async function burst(server: ChildServer, id: string, count: number): Promise<ReadResult[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: count });
  const headers = { ...OTHER, 'x-pad': 'p'.repeat(14_000) };
  try {
    return (await Promise.all(Array.from({ length: count }, () => read(server.http, `/skills/${id}/s`, { headers, agent })))) as ReadResult[];
  } finally {
    agent.destroy();
  }
}

/** Every answer is the client's, or a refusal that tells the reader to come back; some are refusals. */
function expectServedOrRefused(results: readonly ReadResult[], answer: string, refusal: RegExp): void {
  const refused = results.filter((r) => r.status === 503);
  expect(results.filter((r) => r.status !== 503).every((r) => r.status === 200 && r.body === answer)).toBe(true);
  expect(refused.length).toBeGreaterThan(0);
  for (const r of refused) {
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'not_ready', message: expect.stringMatching(refusal) } });
  }
}

describe('a burst of reads larger than the byte cap', () => {
  it('leaves a healthy websocket client connected: the reads past the cap are refused', { timeout: 30_000 }, async () => {
    const server = await startChild([...POLICY, '--max-ws-buffered-bytes', String(MB)]);
    const victim = await wsClientWithSkill(server.ws, 'victim', 'fine', OWNER);
    const results = await burst(server, 'victim', 700);
    expectServedOrRefused(results, 'fine', /^Client "victim" is behind: \d+ bytes would wait for it, limit 1048576; try again later$/);
    expect(victim.socket.readyState).toBe(WebSocket.OPEN);
    expect(await read(server.http, '/skills/victim/s', { headers: OWNER })).toMatchObject({ status: 200, body: 'fine' });
  });

  it('leaves a healthy HTTP loop session alone: the reads past its queue are refused', { timeout: 30_000 }, async () => {
    const server = await startChild([...POLICY, '--http-loop-max-queued-bytes', String(MB)]);
    const victim = await LoopTestClient.register(`${server.http}/mdp/http-loop`, descriptor('looped', [skill('/s/skill.md')]), { headers: OWNER });
    victim.handler = () => 'fine';
    const results = await burst(server, 'looped', 400);
    expectServedOrRefused(
      results,
      'fine',
      /^HTTP loop queue full \(\d+ messages, \d+ bytes waiting; at most 10000 messages, 1048576 bytes\): the client is behind; try again later$/,
    );
    expect(await read(server.http, '/skills/looped/s', { headers: OWNER })).toMatchObject({ status: 200, body: 'fine' });
  });
});
