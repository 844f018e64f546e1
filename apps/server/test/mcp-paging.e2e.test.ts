/**
 * MCP lists in pages on the real server (SPEC §13, MCP's own cursor/nextCursor), driven by the
 * SDK's own Client over Streamable HTTP: a catalog larger than one page is walked page by page,
 * every skill and prompt listed once; the listing tools page with limit and cursor.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { PathDescriptor } from '@mdp/protocol';
import { TestClient, descriptor, stopAll } from '@mdp/test-kit';
import { httpAgent } from './mcp-harness.js';

afterEach(stopAll);

const pad = (n: number): string => String(n).padStart(4, '0');

describe('MCP lists of a large catalog', () => {
  it('come in pages with nextCursor until every skill and prompt is listed once', async () => {
    const agent = await httpAgent();
    const listed = agent.notes.reach('resources', 1);
    const paths: PathDescriptor[] = [
      ...Array.from({ length: 1200 }, (_, i): PathDescriptor => ({ type: 'skill', path: `/s${pad(i)}/skill.md`, description: `Skill ${i}` })),
      ...Array.from({ length: 600 }, (_, i): PathDescriptor => ({ type: 'prompt', path: `/p${pad(i)}.prompt.md` })),
    ];
    await TestClient.register(agent.ws, descriptor('big', paths));
    await listed;

    const uris: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await agent.client.listResources(cursor === undefined ? {} : { cursor });
      // The server's own guide (mdp:///SKILL.md) heads the first page.
      uris.push(...page.resources.map((r) => r.uri).filter((uri) => uri !== 'mdp:///SKILL.md'));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(uris).toHaveLength(1200);
    expect(new Set(uris).size).toBe(1200);
    expect(pages).toBe(3);

    const prompts: string[] = [];
    do {
      const page = await agent.client.listPrompts(cursor === undefined ? {} : { cursor });
      prompts.push(...page.prompts.map((p) => p.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(new Set(prompts).size).toBe(600);

    await expect(agent.client.listResources({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
  });

  it('listPaths pages with limit and cursor', async () => {
    const agent = await httpAgent();
    const paths = Array.from({ length: 250 }, (_, i): PathDescriptor => ({ type: 'endpoint', method: 'GET', path: `/e${pad(i)}` }));
    await TestClient.register(agent.ws, descriptor('many', paths));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const result = await agent.client.callTool({
        name: 'listPaths',
        arguments: { clientId: 'many', limit: 100, ...(cursor === undefined ? {} : { cursor }) },
      });
      const page = result.structuredContent as { paths: Array<{ path: string }>; nextCursor?: string };
      expect(page.paths.length).toBeLessThanOrEqual(100);
      seen.push(...page.paths.map((p) => p.path));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toEqual(paths.map((p) => p.path));
  });
});
