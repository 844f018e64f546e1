/**
 * Skill reads of a client that lives on another node of the fleet (SPEC §16): the reader gets what
 * it would from the client's own node — the same statuses, headers and empty 404s — while the
 * catalog comes from that node (remote.ts of `@mdp/core`). Two routers stand for two nodes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MdpError, Router, clientsSeenBy, createTenancy } from '@mdp/core';
import { PeerDirectory, skill, endpoint } from '@mdp/test-kit';
import { SKILL_TEXT_HEADERS, handleSkillRead, readSkill, type SkillReadOptions, type SkillReadResponse } from '../src/index.js';
import { connectClient, readRequest } from './helpers.js';

let a: Router;
let b: Router;
let directory: PeerDirectory;

beforeEach(() => {
  a = new Router({ invocationTimeoutMs: 60_000 });
  b = new Router({ invocationTimeoutMs: 60_000 });
  directory = new PeerDirectory(b, { notReady: (message, retryAfterMs) => new MdpError('not_ready', message, { details: { retryAfterMs } }) });
  a.fleet.attach(directory);
});

afterEach(async () => {
  await a.close();
  await b.close();
});

const read = (pathname: string, options: SkillReadOptions = {}, init?: Parameters<typeof readRequest>[1]): Promise<SkillReadResponse> =>
  handleSkillRead(a, readRequest(pathname, init), options);

describe('a client of another node', () => {
  it('is read through node A as through its own node, by both routes', async () => {
    const onB = connectClient(b, 'docs', [skill('/guide/skill.md', { contentType: 'text/plain' })]);
    onB.reply = () => ({ ok: true, data: '# Guide' });
    for (const pathname of ['/skills/docs/guide', '/docs/skills/guide/skill.md', '/skills/d%6Fcs/guide']) {
      const response = await read(pathname, {}, { query: { v: '1' }, headers: { 'x-h': 'v' } });
      expect(response, pathname).toEqual({ status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', ...SKILL_TEXT_HEADERS }, body: '# Guide' });
      expect(onB.lastCall).toMatchObject({ method: 'GET', path: '/guide/skill.md', query: { v: '1' }, headers: { 'x-h': 'v' } });
    }
    expect(directory.calls.every((call) => call.route === 'skill')).toBe(true);
  });

  it('answers the seed statuses: empty 404 for an unknown skill or client, 502 for a client failure', async () => {
    const onB = connectClient(b, 'docs', [skill('/guide/skill.md'), endpoint('/x')]);
    const missing = await read('/skills/docs/nope');
    expect(missing).toMatchObject({ status: 404, body: undefined, headers: { 'mdp-error-code': 'unknown_path' } });
    expect(await read('/skills/nobody/guide')).toMatchObject({ status: 404, body: undefined, headers: { 'mdp-error-code': 'unknown_client' } });
    expect(await read('/skills/docs/a/../b')).toMatchObject({ status: 400 });
    onB.reply = () => ({ ok: false, error: { code: 'handler_error', message: 'boom' } });
    const failed = await read('/skills/docs/guide');
    expect(failed.status).toBe(502);
    expect(JSON.parse(failed.body ?? '')).toEqual({ error: { code: 'handler_error', message: 'boom' } });
  });

  it('answers 503 with Retry-After while the bus is down', async () => {
    connectClient(b, 'docs', [skill('/guide/skill.md')]);
    directory.down = true;
    const response = await read('/skills/docs/guide');
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('2');
    expect(JSON.parse(response.body ?? '')).toMatchObject({ error: { code: 'not_ready' } });
  });

  it('is an unknown client for a reader that does not see it (no catalog fetched)', async () => {
    const onB = connectClient(b, 'theirs', [skill('/guide/skill.md')], {});
    const tenancy = createTenancy({ mode: 'principal' });
    const visibleTo = () => clientsSeenBy(tenancy, { principal: 'token:me' });
    expect(onB.session.principal).toBeUndefined();
    const response = await read('/skills/theirs/guide', { visibleTo });
    expect(response).toMatchObject({ status: 404, body: undefined, headers: { 'mdp-error-code': 'unknown_client' } });
    expect(directory.fetches).toEqual([]);
    expect(onB.calls).toEqual([]);
  });

  it('refuses a reader the origin check refuses, after finding the skill, without calling it', async () => {
    const onB = connectClient(b, 'docs', [skill('/guide/skill.md')]);
    const response = await read('/skills/docs/guide', { readerRefusal: () => 'not your page' });
    expect(response).toMatchObject({ status: 403, readerRefused: true });
    expect(onB.calls).toEqual([]);
  });

  it('ends the wait for the catalog and the call when the reader goes away', async () => {
    const onB = connectClient(b, 'docs', [skill('/guide/skill.md')]);
    onB.reply = () => undefined; // never answers
    directory.held = [];
    let answer: SkillReadResponse | undefined;
    const handle = readSkill(a, readRequest('/skills/docs/guide'), {}, (response) => (answer = response));
    expect(handle).toBeDefined();
    a.cancel(handle as NonNullable<typeof handle>);
    directory.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(answer).toMatchObject({ status: 502 });
    expect(JSON.parse(answer?.body ?? '')).toMatchObject({ error: { code: 'transport_error' } });
    expect(onB.calls).toEqual([]);
    expect(b.pendingCount).toBe(0);
  });
});
