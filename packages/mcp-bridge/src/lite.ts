/**
 * `@mdp/mcp-bridge/lite`: the part of the bridge that never loads the MCP SDK — its defaults and
 * names (for a host's flags and `--help`) and the JSON-RPC error answer — so that a server can
 * import it at start and load the bridge itself only when an agent first comes.
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from '@mdp/core';

export { CATALOG_DEFAULTS } from './catalog.js';
export type { CatalogKind, CatalogOptions } from './catalog.js';
export { SURFACES } from './surface.js';
export type { SurfaceMode } from './surface.js';
export { GENERIC_TOOL_NAMES } from './names.js';
export { CALL_MANY_BUDGET_BYTES } from './generic-tools.js';
export { SERVER_GUIDE_URI } from './resource-uri.js';

/**
 * Most bytes of text and decoded data one tool result's content blocks, or one resource's blob, may
 * hold (`maxContentBytes`): 3 MiB, whose base64 (4 MiB) is under the 5 MB that model APIs commonly
 * take for one image. Past it a result is a `too_large` error, never content cut short.
 */
export const DEFAULT_MAX_CONTENT_BYTES = 3 * 1024 * 1024;

export const MCP_HTTP_DEFAULTS = {
  /** Largest POST body, bytes. */
  maxBodyBytes: DEFAULT_MAX_MESSAGE_BYTES,
  /** Sessions open at once; beyond that an idle one is ended for a new one, or the initialize gets 503. */
  maxSessions: 256,
  /** Sessions one principal holds at once (with `principalOf`); beyond that, the same. */
  maxSessionsPerPrincipal: 32,
  /** A session with nothing in flight and no stream open is closed after this long, ms. */
  sessionIdleMs: 10 * 60_000,
} as const;

/**
 * MCP tasks (a `tools/call` with `task`, answered by `tasks/get`, `tasks/result`, `tasks/list`,
 * `tasks/cancel`): how long their calls may take and how many a session and a principal hold.
 */
export const MCP_TASK_DEFAULTS = {
  /** Time the client has to answer a call made as a task, ms (a plain call has the router's invocation time-out). */
  timeoutMs: 10 * 60_000,
  /** Tasks one session holds at once, working or finished and not yet expired. */
  maxPerSession: 32,
  /** Tasks the sessions of one principal hold at once, together (without principals: every session's). */
  maxPerPrincipal: 128,
  /** The `pollInterval` a task suggests to its requestor, ms. */
  pollIntervalMs: 500,
  /** A task is kept at least this long past the latest its call can end (`ttl` ≥ timeoutMs + keepMs), ms. */
  keepMs: 60_000,
  /** The longest `ttl` a requestor may ask for, ms (never less than timeoutMs + keepMs). */
  maxTtlMs: 60 * 60_000,
} as const;

/** A JSON-RPC error answer (MCP's HTTP errors carry one, `id` null). */
export function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
