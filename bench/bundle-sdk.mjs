/**
 * The bundled floor of the cold-start scenario (issue 33), the last step of the bench's build: the
 * same bare MCP server as `src/servers/bare-mcp-stdio.ts` (the SDK's `McpServer` with one tool
 * returning a constant, on stdio), bundled by esbuild into one ES module file,
 * `dist/servers/bare-mcp-stdio.bundle.js`, with the options the `mdp-server` binary is bundled with
 * (`apps/server/bundle-options.mjs`: ES module, node 20, `module` before `main`, source maps) and
 * its comments made ASCII by the binary's own `ascii-comments.mjs`. The unbundled
 * server loads the SDK's 150-odd module files one by one; the binary loads a few bundled files. This
 * one pays what node and the SDK cost when they are loaded as the binary loads them, so that
 * `mdp-server mcp` / this says what the server's own code adds.
 *
 * The SDK is the very copy the MCP bridge runs on, found from the bridge's package, as
 * `src/servers/sdk.ts` finds it (the bench does not depend on the SDK itself).
 */
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { asciiComments } from '../apps/server/ascii-comments.mjs';
import { NODE_BUNDLE } from '../apps/server/bundle-options.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const fromServer = createRequire(createRequire(join(here, 'package.json')).resolve('@mdp/server'));
const fromBridge = createRequire(fromServer.resolve('@mdp/mcp-bridge'));

/** `@modelcontextprotocol/sdk/<subpath>` as the bridge's copy: its ES module build. */
const bridgeSdk = {
  name: 'bridge-sdk',
  setup(b) {
    b.onResolve({ filter: /^@modelcontextprotocol\/sdk\// }, (args) => ({
      path: fromBridge.resolve(args.path).replace(`${sep}dist${sep}cjs${sep}`, `${sep}dist${sep}esm${sep}`),
    }));
  },
};

const outfile = join(here, 'dist', 'servers', 'bare-mcp-stdio.bundle.js');
await build({
  stdin: {
    contents: `
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
const server = new McpServer({ name: 'bare-mcp-stdio', version: '1.0.0' });
server.registerTool('ping', { description: 'A constant answer' }, () => ({ content: [{ type: 'text', text: 'pong' }] }));
await server.connect(new StdioServerTransport());
`,
    resolveDir: here,
    sourcefile: 'bare-mcp-stdio.bundle.js',
    loader: 'js',
  },
  ...NODE_BUNDLE,
  outfile,
  plugins: [bridgeSdk],
});
asciiComments(outfile);
