/**
 * Baseline: the MCP SDK alone over Streamable HTTP, the floor of `mcp-call` (issue 33): node:http,
 * the SDK's node transport with the settings mdp-server's `/mcp` uses (session ids from
 * `randomUUID`, JSON answers rather than one-event streams, the body read and parsed before the
 * transport gets it), and an `McpServer` per session with one tool, `callPath`, that returns a
 * constant: the skill text as `{ ok, data }`, what mdp-server's `callPath` answers. The tool
 * declares no input schema, so the SDK checks no arguments: a floor, not a twin.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { SKILL_TEXT } from '../fixtures.js';
import { importSdk, type SdkMcpServerClass, type SdkTransport } from './sdk.js';
import { serve } from './serve.js';

const [{ McpServer }, { StreamableHTTPServerTransport }, { isInitializeRequest }] = await Promise.all([
  importSdk<{ McpServer: SdkMcpServerClass }>('server/mcp.js'),
  importSdk<{
    StreamableHTTPServerTransport: new (options: {
      sessionIdGenerator: () => string;
      enableJsonResponse: boolean;
      onsessioninitialized: (sessionId: string) => void;
    }) => SdkTransport;
  }>('server/streamableHttp.js'),
  importSdk<{ isInitializeRequest: (message: unknown) => boolean }>('types.js'),
]);
const ANSWER = { ok: true, data: SKILL_TEXT };
const transports = new Map<string, SdkTransport>();

async function open(): Promise<SdkTransport> {
  const server = new McpServer({ name: 'bare-mcp', version: '1.0.0' });
  server.registerTool('callPath', { description: 'Call one path of one client (a constant answer)' }, () => ({
    content: [{ type: 'text', text: JSON.stringify(ANSWER) }],
    structuredContent: ANSWER,
  }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    enableJsonResponse: true,
    onsessioninitialized: (sessionId) => void transports.set(sessionId, transport),
  });
  await server.connect(transport);
  return transport;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

const server = createServer((req, res) => {
  if (req.url !== '/mcp' || req.method !== 'POST') return void res.writeHead(404).end();
  void (async () => {
    const body = await readJson(req);
    const id = req.headers['mcp-session-id'];
    const transport = typeof id === 'string' ? transports.get(id) : id === undefined && isInitializeRequest(body) ? await open() : undefined;
    if (!transport) return void res.writeHead(404).end();
    await transport.handleRequest(req, res, body);
  })().catch(() => {
    if (!res.headersSent) res.writeHead(400);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
serve('bare-mcp', server);
