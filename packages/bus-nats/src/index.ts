export { MAX_FLEET_ID_BYTES, announcementProblem, createNatsBus } from './bus.js';
export { LATENCY_BUCKETS_MS } from './api.js';
export type {
  BusHandlers,
  BusMetrics,
  BusStatus,
  DirectoryChange,
  IncomingCallOptions,
  LocalClient,
  NatsBus,
  OutgoingOptions,
  RelayResult,
  SessionRelayHandler,
} from './api.js';
export { BUS_DEFAULTS } from './defaults.js';
export { ENVELOPE_BYTES, MIN_SERVER_PAYLOAD, optionsProblem } from './options.js';
export type { BusAuth, BusTls, NatsBusOptions } from './options.js';
export { DIRECTORY_DEFAULTS, Directory, directoryConfig } from './directory.js';
export type { Announcement, DirectoryConfig, DirectoryEffect, DirectoryEvent, KeyState, LocalAnnouncement, NodeBeat, RemoteClient } from './directory.js';
export { FleetNames, MAX_PLAIN_ID_BYTES, idToken, prefixFor, prefixProblem } from './subjects.js';
export { descriptorDigest } from './protocol.js';
export type { RemoteCall } from './protocol.js';
export { decodeHttpRelay, decodeHttpRelayAnswer, encodeHttpRelay, encodeHttpRelayAnswer } from './http-relay.js';
export type { HttpRelayAnswer, HttpRelayRequest } from './http-relay.js';
