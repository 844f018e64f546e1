/**
 * MCP over stdio: one session on the process' stdin and stdout (the SDK's stdio transport). The
 * session ends when stdin ends (the agent closed it), so that whoever runs this can stop
 * gracefully. Nothing but MCP may be written to stdout while it runs: logs go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Readable, Writable } from 'node:stream';
import type { McpBridge, McpSession } from './bridge.js';

export async function connectStdio(bridge: McpBridge, stdin: Readable = process.stdin, stdout: Writable = process.stdout): Promise<McpSession> {
  const session = await bridge.connect(new StdioServerTransport(stdin, stdout));
  const end = (): void => void session.close();
  stdin.once('end', end);
  stdin.once('close', end);
  void session.closed.then(() => {
    stdin.off('end', end);
    stdin.off('close', end);
  });
  return session;
}
