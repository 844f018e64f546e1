/**
 * /mcp under an auth policy: a full session table makes room only for an initialize, the one
 * request that opens a session; anything else without a session id gets its 400 and ends nobody's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { stopAll } from '@mdp/test-kit';
import { startServer } from './harness.js';

afterEach(stopAll);

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'r', version: '0' } },
};

async function mcp(url: string, token: string, body: unknown, sessionId?: string): Promise<{ status: number; sessionId: string | undefined }> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    authorization: `Bearer ${token}`,
    accept: 'application/json, text/event-stream',
  };
  if (sessionId) Object.assign(headers, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' });
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  await res.text();
  return { status: res.status, sessionId: res.headers.get('mcp-session-id') ?? undefined };
}

describe('/mcp session eviction', () => {
  it("never ends another principal's session for a request that opens none", async () => {
    const t = await startServer({ authTokens: ['agent-a', 'agent-b'], mcp: { maxSessions: 2 } });
    const url = `${t.http}/mcp`;
    const a = await mcp(url, 'agent-a', INIT);
    expect(a.status).toBe(200);
    expect((await mcp(url, 'agent-b', INIT)).status).toBe(200);
    // The table is full. B posts something that is no initialize, without a session id: 400.
    expect((await mcp(url, 'agent-b', { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status).toBe(400);
    expect((await mcp(url, 'agent-a', { jsonrpc: '2.0', id: 3, method: 'tools/list' }, a.sessionId)).status).toBe(200);
    // An initialize still makes room (it ends an idle session).
    expect((await mcp(url, 'agent-b', INIT)).status).toBe(200);
  });
});
