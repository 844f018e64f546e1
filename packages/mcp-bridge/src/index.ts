export { createMcpBridge } from './bridge.js';
export type { McpBridge, McpBridgeOptions, McpSession } from './bridge.js';
export { CATALOG_DEFAULTS, CATALOG_KINDS } from './catalog.js';
export type { CatalogKind, CatalogOptions } from './catalog.js';
export { SURFACES } from './surface.js';
export type { SurfaceMode } from './surface.js';
export { GENERIC_TOOL_NAMES, NAME_MAX_CHARS } from './names.js';
export { systemClock } from './clock.js';
export type { Clock } from './clock.js';
