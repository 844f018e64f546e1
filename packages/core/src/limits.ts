/**
 * Largest MDP message or HTTP request body, bytes: 1 MiB (SPEC §5). The default of every edge that
 * reads one (websocket frames, HTTP loop, host API and MCP bodies, cluster links), so that what one
 * edge accepts the others accept too; the server's `maxMessageBytes` sets them all at once.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
