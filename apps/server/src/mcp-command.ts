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

/** Serve the stdio session; `stop` runs once it has ended (stdin closed, or the agent hung up). */
export async function serveStdio(server: MdpServer, stop: (reason: string) => void): Promise<void> {
  const bridge = await server.openMcp();
  // Loaded only here: a plain `mdp-server` never loads the MCP SDK until an agent comes to /mcp.
  const { connectStdio } = await import('@mdp/mcp-bridge');
  const session = await connectStdio(bridge);
  void session.closed.then(() => stop('stdin closed'));
}
