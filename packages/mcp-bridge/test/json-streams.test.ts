/**
 * The workaround for the SDK's JSON-response-mode leak (typescript-sdk #2559): a real transport
 * answering real requests keeps no stream mapping once its answers are out. If the SDK renames its
 * internals, `streamMappingCount` is undefined and this test fails: look at the workaround again.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { releaseAnsweredJsonStreams, streamMappingCount } from '../src/json-streams.js';

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('releaseAnsweredJsonStreams', () => {
  it('leaves no stream mapping behind for answered JSON-mode POSTs', async () => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'session-1', enableJsonResponse: true });
    const server = new Server({ name: 't', version: '1' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
    await server.connect(transport);
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      transport.handleRequest(new Request('http://127.0.0.1/mcp', { method: 'POST', headers: { ...HEADERS, ...headers } }), { parsedBody: body });

    const init = await post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    });
    expect(init.status).toBe(200);
    const session = { 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-06-18' };
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    releaseAnsweredJsonStreams(transport);

    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' }, session)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    // Without the workaround the transport now holds one mapping per answered POST.
    expect(releaseAnsweredJsonStreams(transport)).toBe(20);
    expect(streamMappingCount(transport)).toBe(0);
    await server.close();
  });
});
