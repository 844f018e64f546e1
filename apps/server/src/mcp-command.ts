/**
 * `mdp-server mcp [options]`: the server as usual (MDP listener, cluster membership, /mcp), plus
 * one MCP session on stdin/stdout for the agent that launched it, so that several agents on one
 * machine share one hub. stdout carries only MCP; whatever the binary says goes to stderr. When
 * the agent closes stdin the server stops gracefully.
 */
import { Console } from 'node:console';
import type { Writable } from 'node:stream';
import type { MdpServer } from './server.js';

/**
 * Send everything `console` prints to `stream` (stderr in `mdp-server mcp`): a library that prints
 * to stdout would put text among the MCP frames and break the agent's session. Returns the undo.
 */
export function routeConsoleTo(stream: Writable): () => void {
  const saved = { ...console };
  Object.assign(console, new Console({ stdout: stream, stderr: stream }));
  return () => void Object.assign(console, saved);
}

/** The arguments of the `mcp` subcommand, or undefined when `argv` is not one. */
export function mcpSubcommandArgs(argv: readonly string[]): string[] | undefined {
  return argv[0] === 'mcp' ? argv.slice(1) : undefined;
}

let bridgeModule: Promise<typeof import('@mdp/mcp-bridge')> | undefined;

/**
 * Start loading the MCP bridge and its SDK, or the load already started. `mdp-server mcp` starts it
 * with the server's own, so that the SDK's modules load while the server binds and its cluster
 * looks around, instead of after. A plain `mdp-server` never loads them until an agent comes to /mcp.
 */
export function loadMcpBridge(): Promise<typeof import('@mdp/mcp-bridge')> {
  bridgeModule ??= import('@mdp/mcp-bridge');
  return bridgeModule;
}

/** Serve the stdio session; `stop` runs once it has ended (stdin closed, or the agent hung up). */
export async function serveStdio(server: MdpServer, stop: (reason: string) => void): Promise<void> {
  const [bridge, { connectStdio }] = await Promise.all([server.openMcp(), loadMcpBridge()]);
  const session = await connectStdio(bridge);
  void session.closed.then(() => stop('stdin closed'));
}
