export { createMcpBridge } from './bridge.js';
export { MAX_IDLE_CATALOGS } from './bridge.js';
export type { McpBridge, McpBridgeOptions, McpConnectOptions, McpSession, ServerGuide, ServerInfo } from './bridge.js';
export type { TaskLimits } from './tasks.js';
// These are also the `./lite` entry, which never loads the MCP SDK.
export {
  CALL_MANY_BUDGET_BYTES,
  CATALOG_DEFAULTS,
  DEFAULT_MAX_CONTENT_BYTES,
  GENERIC_TOOL_NAMES,
  MCP_HTTP_DEFAULTS,
  MCP_TASK_DEFAULTS,
  SERVER_GUIDE_URI,
  SURFACES,
  jsonRpcError,
} from './lite.js';
export type { CatalogKind, CatalogOptions, SurfaceMode } from './lite.js';
export { createMcpHttpHandler, mcpActionOf } from './http.js';
export type { McpHttpHandler, McpHttpOptions, McpScopeGuard } from './http.js';
// The policy lives in @mdp/core (the host API and the inspector use it too); named here for embedders of /mcp.
export { originPolicyFor } from '@mdp/core';
export type { OriginPolicy } from '@mdp/core';
export { connectStdio } from './stdio.js';
