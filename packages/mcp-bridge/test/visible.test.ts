/**
 * Results an agent can see, through the SDK's own Client: MCP content and declared media as content
 * blocks (structured content beside them only for a tool with an output schema), a malformed block
 * as JSON, content over `maxContentBytes` a clear error, a binary skill as a blob.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createMcpBridge, type McpBridgeOptions } from '../src/bridge.js';
import { REFRESH_MIN_INTERVAL_MS } from '../src/catalog-driver.js';
import { endpoint, manualClock, skill } from '@mdp/test-kit';
import { FakeHost, listed } from './fakes.js';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG, 'base64').length;

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

const page = listed('page', [
  endpoint('/screenshot', 'GET', { contentType: 'image/png' }),
  endpoint('/snap', 'GET', { contentType: 'image/*', outputSchema: { type: 'string' } }),
  endpoint('/blocks', 'GET'),
  skill('/logo.skill.md', { contentType: 'image/png' }),
  skill('/docs/skill.md'),
]);

async function agent(options: Partial<McpBridgeOptions> = {}): Promise<{ client: Client; host: FakeHost }> {
  const host = new FakeHost();
  const clock = manualClock(0);
  const bridge = createMcpBridge({ host, clock, ...options });
  open.push(bridge);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.connect(serverSide);
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  host.set([page]);
  await clock.advanceSettled(REFRESH_MIN_INTERVAL_MS);
  await client.listTools();
  return { client, host };
}

describe('results an agent can see', () => {
  it("an image endpoint's base64 is an image block; with an outputSchema the JSON stays as structuredContent", async () => {
    const { client, host } = await agent();
    host.answer = () => ({ ok: true, data: PNG });
    expect(await client.callTool({ name: 'screenshot', arguments: {} })).toEqual({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] });
    host.answer = () => ({ ok: true, data: `data:image/png;base64,${PNG}` });
    // The SDK client checks structuredContent against the listed schema: it passes.
    expect(await client.callTool({ name: 'snap', arguments: {} })).toEqual({
      content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
      structuredContent: { ok: true, data: `data:image/png;base64,${PNG}` },
    });
  });

  it("callPath shows MCP content and the endpoint's declared media as blocks too", async () => {
    const { client, host } = await agent();
    host.answer = () => ({ ok: true, data: PNG });
    expect(await client.callTool({ name: 'callPath', arguments: { clientId: 'page', method: 'GET', path: '/screenshot' } })).toEqual({
      content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
    });
    host.answer = () => ({
      ok: true,
      data: [
        { type: 'text', text: 'the page' },
        { type: 'resource_link', uri: 'mdp://page/docs/skill.md', name: 'docs' },
      ],
    });
    expect((await client.callTool({ name: 'callPath', arguments: { clientId: 'page', method: 'GET', path: '/blocks' } })).content).toEqual([
      { type: 'text', text: 'the page' },
      { type: 'resource_link', uri: 'mdp://page/docs/skill.md', name: 'docs' },
    ]);
    // The same base64 from an endpoint that declares no image type is data, shown as JSON.
    host.answer = () => ({ ok: true, data: PNG });
    expect(await client.callTool({ name: 'blocks', arguments: {} })).toEqual({
      content: [{ type: 'text', text: JSON.stringify({ ok: true, data: PNG }) }],
      structuredContent: { ok: true, data: PNG },
    });
  });

  it('a malformed block is shown as JSON text, never passed through', async () => {
    const { client, host } = await agent();
    const bad = [
      { type: 'text', text: 'fine' },
      { type: 'image', data: PNG, mimeType: 'text/html' },
    ];
    host.answer = () => ({ ok: true, data: bad });
    expect(await client.callTool({ name: 'blocks', arguments: {} })).toEqual({
      content: [{ type: 'text', text: JSON.stringify({ ok: true, data: bad }) }],
      structuredContent: { ok: true, data: bad },
    });
  });

  it('content over maxContentBytes is a too_large tool error naming the sizes, with nothing of the image', async () => {
    const { client, host } = await agent({ maxContentBytes: PNG_BYTES - 1 });
    host.answer = () => ({ ok: true, data: PNG });
    const result = await client.callTool({ name: 'screenshot', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: {
        ok: false,
        error: { code: 'too_large', message: expect.stringContaining(`${PNG_BYTES} bytes of content, over the ${PNG_BYTES - 1} bytes`) },
      },
    });
    expect(JSON.stringify(result)).not.toContain(PNG.slice(0, 20));
  });

  it('a skill of a binary type is read as a blob (capped, and an answer that is not base64 is an error); a text skill as text', async () => {
    const { client, host } = await agent();
    host.answer = (request) => ({ ok: true, data: request.path === '/logo.skill.md' ? PNG : '# Docs' });
    expect(await client.readResource({ uri: 'mdp://page/logo.skill.md' })).toEqual({
      contents: [{ uri: 'mdp://page/logo.skill.md', mimeType: 'image/png', blob: PNG }],
    });
    expect(await client.readResource({ uri: 'mdp://page/docs/skill.md' })).toEqual({
      contents: [{ uri: 'mdp://page/docs/skill.md', mimeType: 'text/markdown', text: '# Docs' }],
    });
    host.answer = () => ({ ok: true, data: 'a caption' });
    await expect(client.readResource({ uri: 'mdp://page/logo.skill.md' })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('not base64'),
    });
    const small = await agent({ maxContentBytes: 10 });
    small.host.answer = () => ({ ok: true, data: PNG });
    await expect(small.client.readResource({ uri: 'mdp://page/logo.skill.md' })).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining(`${PNG_BYTES} bytes, over the 10 bytes`),
    });
  });
});
