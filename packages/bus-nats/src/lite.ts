/**
 * `@mdp/bus-nats/lite`: the part of the package that never loads the NATS client — its defaults,
 * the fleet's subject prefix rules, the HTTP loop relay's codecs and the API's types — so that a
 * server can import it at start and load the bus itself (`@mdp/bus-nats`) only in bus mode.
 */
export { LATENCY_BUCKETS_MS } from './api.js';
export type { BusHandlers, BusMetrics, BusStatus, DirectoryChange, LocalClient, NatsBus, RelayResult, SessionRelayHandler } from './api.js';
export { BUS_DEFAULTS } from './defaults.js';
export type { RemoteClient } from './directory.js';
export type { BusAuth, BusTls } from './options.js';
export { prefixFor, prefixProblem } from './subjects.js';
export { decodeHttpRelay, decodeHttpRelayAnswer, encodeHttpRelay, encodeHttpRelayAnswer } from './http-relay.js';
export type { HttpRelayAnswer, HttpRelayRequest } from './http-relay.js';
