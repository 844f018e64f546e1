/**
 * Paged MCP lists (pages.ts) and a catalog built from every page of the host's listing, driven by
 * the SDK's own Client over an in-memory transport, on a real router.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { Router, createLocalHost } from '@mdp/core';
import { fakeClient, prompt, skill } from '@mdp/test-kit';
import { createMcpBridge, type McpBridge } from '../src/bridge.js';
import { MCP_PAGE, jsonBytes, mcpPage } from '../src/pages.js';

let router: Router;
let bridge: McpBridge;
let client: Client;

beforeEach(async () => {
  router = new Router();
});

afterEach(async () => {
  await client?.close();
  await bridge?.close();
  await router.close();
});

async function connect(): Promise<Client> {
  bridge = createMcpBridge({ host: createLocalHost(router) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.connect(serverSide);
  client = new Client({ name: 'paging-agent', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

const pad = (n: number): string => String(n).padStart(4, '0');

/** Every resource URI, page by page; `between` runs after each page. */
async function walkResources(agent: Client, between?: () => void): Promise<{ uris: string[]; pages: number }> {
  const uris: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await agent.listResources(cursor === undefined ? {} : { cursor });
    expect(page.resources.length).toBeLessThanOrEqual(MCP_PAGE.limit);
    expect(Buffer.byteLength(JSON.stringify(page.resources))).toBeLessThanOrEqual(MCP_PAGE.maxBytes);
    uris.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
    pages++;
    between?.();
  } while (cursor !== undefined);
  return { uris, pages };
}

describe('MCP lists', () => {
  it('page resources/list with cursor and nextCursor, over a catalog listed from every host page', async () => {
    // More clients than one host page holds (1000), so the catalog walks the host's pages too.
    for (let i = 0; i < 1100; i++) fakeClient(router, { id: `c${pad(i)}`, name: `C${i}`, paths: [skill('/docs/skill.md')] });
    const agent = await connect();
    const { uris, pages } = await walkResources(agent);
    expect(uris).toHaveLength(1100);
    expect(new Set(uris).size).toBe(1100);
    expect(uris[0]).toBe('mdp://c0000/docs/skill.md');
    expect(pages).toBe(3);
  });

  it('page prompts/list and resources/templates/list the same way', async () => {
    const paths = Array.from({ length: 600 }, (_, i) => [prompt(`/p${pad(i)}.prompt.md`), skill(`/t${pad(i)}/:topic/skill.md`)]).flat();
    fakeClient(router, { id: 'many', name: 'Many', paths });
    const agent = await connect();
    const prompts: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await agent.listPrompts(cursor === undefined ? {} : { cursor });
      prompts.push(...page.prompts.map((p) => p.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(prompts).toHaveLength(600);
    expect(new Set(prompts).size).toBe(600);
    const first = await agent.listResourceTemplates();
    expect(first.resourceTemplates).toHaveLength(MCP_PAGE.limit);
    const second = await agent.listResourceTemplates({ cursor: first.nextCursor });
    expect(second.resourceTemplates).toHaveLength(100);
    expect(second.nextCursor).toBeUndefined();
  });

  it('refuse a cursor they did not make with invalid params (-32602)', async () => {
    fakeClient(router, { id: 'one', name: 'One', paths: [skill('/docs/skill.md'), prompt('/ask.prompt.md')] });
    const agent = await connect();
    await expect(agent.listResources({ cursor: 'garbage' })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
    const cursorOfPrompts = Buffer.from(JSON.stringify([1, 'prompts/list', 'x'])).toString('base64url');
    await expect(agent.listResources({ cursor: cursorOfPrompts })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
    await expect(agent.listPrompts({ cursor: '!' })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
  });
});

describe('mcpPage', () => {
  it('keeps every item present for the whole walk, once, while the list changes between pages', () => {
    for (let seed = 1; seed <= 10; seed++) {
      let list = Array.from({ length: 2000 }, (_, i) => `mdp://c${pad(i)}/s/skill.md`);
      const atStart = new Set(list);
      const removed = new Set<string>();
      const seen: string[] = [];
      let cursor: string | undefined;
      let round = 0;
      do {
        const { page, nextCursor } = mcpPage('resources/list', list, (uri) => uri, cursor, jsonBytes);
        seen.push(...page);
        cursor = nextCursor;
        // A new array each time, as a rebuilt surface: some leave, some come, in no order.
        const gone = new Set(list.filter((_, i) => (i * 7 + seed + round) % 11 === 0));
        for (const uri of gone) removed.add(uri);
        list = [...list.filter((uri) => !gone.has(uri)), ...Array.from({ length: 30 }, (_, i) => `mdp://n${seed}-${round}-${i}/s/skill.md`)].reverse();
        round++;
      } while (cursor !== undefined);
      const listed = new Set(seen);
      expect(listed.size, `seed ${seed}`).toBe(seen.length);
      const missing = [...atStart].filter((uri) => !removed.has(uri) && !listed.has(uri));
      expect(missing, `seed ${seed}`).toEqual([]);
      expect(removed.size, `seed ${seed}`).toBeGreaterThan(0);
    }
  });
});

describe('the listing tools', () => {
  it('take limit and cursor and answer nextCursor until the last page', async () => {
    for (let i = 0; i < 5; i++) fakeClient(router, { id: `c${i}`, name: `C${i}`, paths: [skill('/docs/skill.md')] });
    const agent = await connect();
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const result = await agent.callTool({ name: 'listClients', arguments: { limit: 2, ...(cursor === undefined ? {} : { cursor }) } });
      const page = result.structuredContent as { clients: Array<{ id: string }>; nextCursor?: string };
      ids.push(...page.clients.map((c) => c.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(ids).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    const paths = await agent.callTool({ name: 'listPaths', arguments: { limit: 3 } });
    expect(paths.structuredContent).toMatchObject({ paths: expect.any(Array), nextCursor: expect.any(String) });
  });

  it('answer a bad limit or cursor with an isError result naming it', async () => {
    const agent = await connect();
    const bad = await agent.callTool({ name: 'listClients', arguments: { limit: 0 } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.structuredContent)).toContain('limit');
    const junk = await agent.callTool({ name: 'listPaths', arguments: { cursor: 'junk' } });
    expect(junk).toMatchObject({
      isError: true,
      structuredContent: { ok: false, error: { code: 'bad_request', message: expect.stringMatching(/^cursor: /) } },
    });
  });
});
