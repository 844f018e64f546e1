export { HTTP_LOOP_DEFAULTS } from './defaults.js';
export { createHttpLoopTransport } from './transport.js';
export type { HttpLoopOptions, HttpLoopTransport } from './transport.js';
export type { NodeExtraHeaders, NodeHandler } from './node-adapter.js';
export { MAX_WAIT_MS, resolveWaitMs } from './wait.js';
export { SESSION_ID_HEADER, SESSION_ID_QUERY } from './session-id.js';
export { RELAY_POLL_HEADER } from './relay.js';
export type { LoopRelay, RelayOutcome, RelayedAnswer, RelayedRequest } from './relay.js';
