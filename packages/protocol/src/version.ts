/** Name every MDP metadata document carries in `protocol`. */
export const PROTOCOL_NAME = 'mdp';
/** Exact protocol version this implementation speaks. */
export const PROTOCOL_VERSION = '2.0.0';
/** The port an MDP server listens on unless told otherwise (SPEC §5); probes and discovery try it first. */
export const DEFAULT_PORT = 47372;
/** Semver ranges accepted from peers for server-to-server proxying. */
export const SUPPORTED_PROTOCOL_RANGES: readonly string[] = Object.freeze(['^2.0.0']);
