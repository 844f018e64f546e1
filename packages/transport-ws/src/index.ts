export { WS_LIMIT_DEFAULTS } from './defaults.js';
export { createWebSocketTransport } from './transport.js';
export type { WebSocketTransport, WebSocketTransportOptions } from './transport.js';
export { WS_CLOSE } from './close-codes.js';
export { HOLD_FROM } from './outbound.js';
