/**
 * Baseline of the cold-start scenario: the MCP SDK alone over stdio, the least an agent's host can
 * launch (an `McpServer` with one tool returning a constant): node's start and the SDK's load,
 * before it answers `initialize`.
 */
import { importSdk, type SdkMcpServerClass } from './sdk.js';

const [{ McpServer }, { StdioServerTransport }] = await Promise.all([
  importSdk<{ McpServer: SdkMcpServerClass }>('server/mcp.js'),
  importSdk<{ StdioServerTransport: new () => unknown }>('server/stdio.js'),
]);
const server = new McpServer({ name: 'bare-mcp-stdio', version: '1.0.0' });
server.registerTool('ping', { description: 'A constant answer' }, () => ({ content: [{ type: 'text', text: 'pong' }] }));
await server.connect(new StdioServerTransport());
