/**
 * Options of a bus node and their translation to nats.js connection options: several server URLs,
 * one way to authenticate (creds file, token, or user and password), TLS with a CA.
 */
import { readFileSync } from 'node:fs';
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import type { Clock, Logger } from '@mdp/core';
import { BUS_DEFAULTS } from './defaults.js';
import { prefixProblem } from './subjects.js';

/** Also here, beside the options it is the defaults of (defaults.ts keeps it apart from the NATS client). */
export { BUS_DEFAULTS };

export interface BusAuth {
  /** A NATS credentials file (JWT and NKey seed), as `nsc` writes it. */
  readonly credsFile?: string;
  readonly token?: string;
  readonly user?: string;
  readonly password?: string;
}

export interface BusTls {
  /** CA certificate(s) that sign the NATS servers' certificates (PEM file). */
  readonly caFile?: string;
  /** Client certificate and key, for servers that verify clients (PEM files). */
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface NatsBusOptions {
  /** NATS server URLs (`nats://host:4222`, `tls://host:4222`), one or several of a cluster. */
  readonly servers: string | readonly string[];
  /** This node's id in the fleet (the server id). Any text; unique in the fleet. */
  readonly nodeId: string;
  /** Fleet prefix of every subject and bucket, so fleets can share one NATS. Default `mdp`. */
  readonly prefix?: string;
  readonly auth?: BusAuth;
  /** TLS to NATS; `true` requires TLS with the system's CAs. `tls://` URLs require it too. */
  readonly tls?: BusTls | boolean;
  /** A node not heard from for this long is gone, with its clients, ms. Default 5000. */
  readonly ttlMs?: number;
  /**
   * Largest MDP message the bus carries (a call's body, an answer, a relayed request), bytes.
   * Default 1 MiB (the server's `--max-message-bytes`). Bodies over the NATS server's
   * `max_payload` go in parts. The envelope around it gets {@link ENVELOPE_BYTES} more.
   */
  readonly maxMessageBytes?: number;
  /** Time a call waits for its answer when the call gives none, ms. Default 15000 (SPEC §4). */
  readonly callTimeoutMs?: number;
  /** Time a catalog fetch or relay waits, ms. Default 10000. */
  readonly requestTimeoutMs?: number;
  /** JetStream replicas of the directory's buckets (1, 3 or 5 on a NATS cluster). Default 1. */
  readonly replicas?: number;
  /** Wait between reconnect attempts, ms (plus up to a second of jitter). Default 1000. */
  readonly reconnectWaitMs?: number;
  /** How long `start()` tries to reach NATS before it gives up, ms. Default 10000. */
  readonly connectTimeoutMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Random source for the incarnation id (tests). Default crypto. */
  readonly incarnation?: string;
}

/** Bytes allowed around a message in a bus body (ids, path, query, headers, auth of a call). */
export const ENVELOPE_BYTES = 64 * 1024;

/** Smallest `max_payload` a NATS server may have for the bus to start, bytes. */
export const MIN_SERVER_PAYLOAD = 8 * 1024;

/** Why these options cannot make a bus, or undefined. */
export function optionsProblem(options: NatsBusOptions): string | undefined {
  const servers = typeof options.servers === 'string' ? [options.servers] : options.servers;
  if (servers.length === 0) return 'bus: at least one NATS server URL is needed';
  for (const url of servers) {
    if (!/^(nats|tls):\/\/[^/\s]+$/.test(url) && !/^[^/\s:]+:\d+$/.test(url))
      return `bus: ${JSON.stringify(url)} is not a NATS URL (nats://HOST:PORT or tls://HOST:PORT)`;
  }
  if (options.nodeId.length === 0) return 'bus: the node id must not be empty';
  const prefix = prefixProblem(options.prefix ?? BUS_DEFAULTS.prefix);
  if (prefix) return prefix;
  const auth = options.auth ?? {};
  const ways = [auth.credsFile !== undefined, auth.token !== undefined, auth.user !== undefined || auth.password !== undefined].filter(Boolean).length;
  if (ways > 1) return 'bus: give one of a creds file, a token, or a user and password';
  if ((auth.user === undefined) !== (auth.password === undefined)) return 'bus: a user needs a password and a password a user';
  const ttl = options.ttlMs ?? BUS_DEFAULTS.ttlMs;
  if (!Number.isInteger(ttl) || ttl < 1000 || ttl > 60_000) return 'bus: the TTL must be an integer from 1000 to 60000 ms';
  const max = options.maxMessageBytes ?? BUS_DEFAULTS.maxMessageBytes;
  if (!Number.isInteger(max) || max < 1024) return 'bus: the largest message must be an integer of at least 1024 bytes';
  const replicas = options.replicas ?? BUS_DEFAULTS.replicas;
  if (![1, 3, 5].includes(replicas)) return 'bus: replicas must be 1, 3 or 5';
  return undefined;
}

/** nats.js connection options for a node; reads the creds file (throws with its path when it cannot). */
export function connectionOptions(options: NatsBusOptions, inboxPrefix: string, name: string): ConnectionOptions {
  const servers = typeof options.servers === 'string' ? [options.servers] : [...options.servers];
  const auth = options.auth ?? {};
  const out: ConnectionOptions = {
    servers,
    name,
    inboxPrefix,
    // Never give up: a fleet node outlives NATS restarts; `start()` bounds only the first connect.
    maxReconnectAttempts: -1,
    reconnectTimeWait: options.reconnectWaitMs ?? BUS_DEFAULTS.reconnectWaitMs,
    reconnectJitter: 1000,
    reconnectJitterTLS: 1000,
    timeout: options.connectTimeoutMs ?? BUS_DEFAULTS.connectTimeoutMs,
    // Ping every 5 s, two missed pongs make the connection stale: a dead NATS is noticed in ~10 s
    // even when no TCP error says so.
    pingInterval: 5000,
    maxPingOut: 2,
  };
  if (auth.credsFile !== undefined) {
    let creds: Uint8Array;
    try {
      creds = readFileSync(auth.credsFile);
    } catch (error) {
      throw new Error(`bus: cannot read the NATS creds file ${auth.credsFile}: ${(error as Error).message}`);
    }
    out.authenticator = credsAuthenticator(creds);
  } else if (auth.token !== undefined) {
    out.token = auth.token;
  } else if (auth.user !== undefined) {
    out.user = auth.user;
    out.pass = auth.password;
  }
  if (options.tls === true) out.tls = {};
  else if (options.tls) out.tls = { ...options.tls };
  return out;
}
