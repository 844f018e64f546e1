/**
 * Results an agent can see (issue 33 item 2), end to end: the SDK's client over stdio (the built
 * binary) and Streamable HTTP, a websocket client whose page returns a PNG screenshot (its endpoint
 * declares `image/png`) and an HTTP loop client that answers with MCP content blocks and a binary
 * skill. PNGs arrive as image blocks, bit for bit; a PNG over --mcp-max-content-bytes is a clear
 * too_large error; the binary skill is a blob.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallClientMessage, ClientDescriptor } from '@mdp/protocol';
import { LoopTestClient, TestClient, endpoint, skill, stopAll } from '@mdp/test-kit';
import { httpAgent, stdioAgent, type Agent } from './mcp-harness.js';
import { png } from './png.js';

afterEach(stopAll);

const CAP = 4096;
const SMALL = png(4, 4);
const BIG = png(48, 48); // about 7 KB: over CAP
const LOGO = png(2, 2);

const page: ClientDescriptor = {
  id: 'page',
  name: 'A web page',
  paths: [endpoint('/screenshot', 'GET', { contentType: 'image/png' }), endpoint('/fullpage', 'GET', { contentType: 'image/png' })],
};
const camera: ClientDescriptor = {
  id: 'camera',
  name: 'Camera app',
  paths: [endpoint('/frame', 'GET'), skill('/logo.skill.md', { contentType: 'image/png' })],
};

function pageAnswer(call: CallClientMessage): unknown {
  return (call.path === '/fullpage' ? BIG : SMALL).toString('base64');
}

function cameraAnswer(call: CallClientMessage): unknown {
  if (call.path === '/logo.skill.md') return `data:image/png;base64,${LOGO.toString('base64')}`;
  return [
    { type: 'text', text: 'Frame 1 of the front camera' },
    { type: 'image', data: SMALL.toString('base64'), mimeType: 'image/png' },
  ];
}

async function world(agent: Agent): Promise<Agent> {
  const socket = await TestClient.register(agent.ws, page);
  socket.handler = pageAnswer;
  const loop = await LoopTestClient.register(`${agent.http}/mdp/http-loop`, camera);
  loop.handler = cameraAnswer;
  for (;;) {
    const names = (await agent.client.listTools()).tools.map((tool) => tool.name);
    if (names.includes('screenshot') && names.includes('frame')) return agent;
    await agent.notes.reach('tools', agent.notes.counts.tools + 1);
  }
}

const image = (result: unknown) => (result as CallToolResult).content.find((block) => block.type === 'image');

describe.each([
  ['stdio', () => stdioAgent(['--mcp-max-content-bytes', String(CAP)])],
  ['Streamable HTTP', () => httpAgent({ mcp: { maxContentBytes: CAP } })],
] as const)('results an agent can see over %s', (_transport, start) => {
  it("a page's PNG (websocket) and a loop client's content blocks arrive as MCP image blocks, bit for bit", async () => {
    const w = await world(await start());
    const shot = await w.client.callTool({ name: 'screenshot', arguments: {} });
    expect(shot).toEqual({ content: [{ type: 'image', data: SMALL.toString('base64'), mimeType: 'image/png' }] });
    const viaCallPath = await w.client.callTool({ name: 'callPath', arguments: { clientId: 'page', method: 'GET', path: '/screenshot' } });
    expect(Buffer.from(image(viaCallPath)!.data as string, 'base64').equals(SMALL)).toBe(true);
    const frame = (await w.client.callTool({ name: 'frame', arguments: {} })) as CallToolResult;
    expect(frame.content.map((block) => block.type)).toEqual(['text', 'image']);
    expect(Buffer.from(image(frame)!.data as string, 'base64').equals(SMALL)).toBe(true);
  });

  it('a PNG over --mcp-max-content-bytes is a too_large error that names the sizes and carries none of it', async () => {
    const w = await world(await start());
    const result = (await w.client.callTool({ name: 'fullpage', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      ok: false,
      error: { code: 'too_large', message: expect.stringContaining(`${BIG.length} bytes of content, over the ${CAP} bytes`) },
    });
    expect(JSON.stringify(result)).not.toContain(BIG.toString('base64').slice(0, 40));
  });

  it('a binary skill is read as a blob', async () => {
    const w = await world(await start());
    expect(await w.client.readResource({ uri: 'mdp://camera/logo.skill.md' })).toEqual({
      contents: [{ uri: 'mdp://camera/logo.skill.md', mimeType: 'image/png', blob: LOGO.toString('base64') }],
    });
  });
});
