export { createMcpBridge } from './bridge.js';
export type { McpBridge, McpBridgeOptions, McpSession } from './bridge.js';
export { CATALOG_DEFAULTS } from './catalog.js';
export type { CatalogKind, CatalogOptions } from './catalog.js';
export { SURFACES } from './surface.js';
export type { SurfaceMode } from './surface.js';
export { GENERIC_TOOL_NAMES } from './names.js';
export { CALL_MANY_BUDGET_BYTES } from './generic-tools.js';
export { MCP_HTTP_DEFAULTS, createMcpHttpHandler, jsonRpcError } from './http.js';
export type { McpHttpHandler, McpHttpOptions } from './http.js';
// The policy lives in @mdp/core (the host API and the inspector use it too); named here for embedders of /mcp.
export { originPolicyFor } from '@mdp/core';
export type { OriginPolicy } from '@mdp/core';
export { connectStdio } from './stdio.js';
