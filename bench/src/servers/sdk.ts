/**
 * The MCP SDK of the bare MCP baselines: the very copy mdp-server's MCP bridge (`@mdp/mcp-bridge`)
 * runs on, found from the bridge's own package. The bench does not depend on the SDK itself: a
 * second copy (with its `zod` peer) in the bench's dependencies would make pnpm inject a copy of
 * `@mdp/server` into the bench instead of linking the workspace's, and the bench would measure that.
 */
import { createRequire } from 'node:module';
import { sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const fromServer = createRequire(fileURLToPath(import.meta.resolve('@mdp/server')));
const fromBridge = createRequire(fromServer.resolve('@mdp/mcp-bridge'));

/** `import()` of an SDK module (`server/mcp.js`…): its ES module build, as the bridge imports it. */
export function importSdk<T>(subpath: string): Promise<T> {
  const commonJs = fromBridge.resolve(`@modelcontextprotocol/sdk/${subpath}`);
  return import(pathToFileURL(commonJs.replace(`${sep}dist${sep}cjs${sep}`, `${sep}dist${sep}esm${sep}`)).href) as Promise<T>;
}

/** What the baselines use of the SDK's classes (the bench has no SDK typings). */
export interface SdkTransport {
  handleRequest(req: unknown, res: unknown, parsedBody?: unknown): Promise<void>;
}
export interface SdkMcpServer {
  registerTool(name: string, config: { description: string }, handler: () => unknown): unknown;
  connect(transport: unknown): Promise<void>;
}
export type SdkMcpServerClass = new (info: { name: string; version: string }) => SdkMcpServer;
