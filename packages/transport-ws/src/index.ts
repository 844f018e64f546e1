export { DEFAULT_MAX_MESSAGE_BYTES, createWebSocketTransport } from './transport.js';
export type { WebSocketTransport, WebSocketTransportOptions } from './transport.js';
export { WS_CLOSE, closeReason } from './close-codes.js';
