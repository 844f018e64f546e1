/** The shared part every feature gets (feature.ts): router, logger, auth gate, limits. */
import type { IncomingMessage } from 'node:http';
import { Router, createAuthGate, createLogger, createTokenPolicy, originPolicyFor, originProblem, type CallRecord } from '@mdp/core';
import { clusterAuthProblem } from './cluster.js';
import { NO_CORS, corsHeadersFor } from './cors.js';
import type { ListeningInfo, ServerContext } from './feature.js';
import { SERVER_DEFAULTS, type MdpServerOptions } from './options.js';

export interface OwnedContext extends ServerContext {
  /** Whether an auth policy guards the server. */
  readonly guarded: boolean;
  /** Record where the server listens (undefined when it stopped before serving). */
  setInfo(info: ListeningInfo | undefined): void;
}

/**
 * Build the context; throws RangeError for options that cannot run safely. `isServerId`: the server
 * ids of this server's cluster, asked at each registration (the cluster starts later): under an
 * auth policy a member's mirrored ids are that member's alone.
 */
export function createServerContext(options: MdpServerOptions, isServerId: (id: string) => boolean = () => false): OwnedContext {
  const logger = options.logger ?? createLogger({ level: options.logLevel ?? SERVER_DEFAULTS.logLevel });
  const policy = options.authPolicy ?? (options.authTokens?.length ? createTokenPolicy(options.authTokens) : undefined);
  const clusterProblem = clusterAuthProblem(options);
  if (clusterProblem) throw new RangeError(clusterProblem);
  const gate = createAuthGate(policy);
  const observers: Array<(record: CallRecord) => void> = [];
  const router = new Router({
    invocationTimeoutMs: options.invocationTimeoutMs ?? SERVER_DEFAULTS.invocationTimeoutMs,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? SERVER_DEFAULTS.heartbeatIntervalMs,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? SERVER_DEFAULTS.heartbeatTimeoutMs,
    maxPendingCalls: options.maxPendingCalls ?? SERVER_DEFAULTS.maxPendingCalls,
    maxPathLength: options.maxPathLength ?? SERVER_DEFAULTS.maxPathLength,
    maxPathSegments: options.maxPathSegments ?? SERVER_DEFAULTS.maxPathSegments,
    maxCatalogPaths: options.maxCatalogPaths ?? SERVER_DEFAULTS.maxCatalogPaths,
    catalogUpdatesPerMinute: options.maxCatalogUpdatesPerMinute ?? SERVER_DEFAULTS.maxCatalogUpdatesPerMinute,
    isServerId,
    logger,
    onCallEnd: (record) => {
      for (let i = 0; i < observers.length; i++) (observers[i] as (record: CallRecord) => void)(record);
    },
  });
  const originPolicy = originPolicyFor(options.host ?? SERVER_DEFAULTS.host, { allowedHosts: options.allowedHosts, allowedOrigins: options.allowedOrigins });
  let info: ListeningInfo | undefined;
  return {
    router,
    logger,
    gate,
    guarded: policy !== undefined,
    extractAuth: gate.extract,
    authorize: policy ? gate.allows : undefined,
    principalOf: gate.principalOf,
    corsFor: (request: IncomingMessage) => corsHeadersFor(request.headers.origin),
    originPolicy,
    guardedCorsFor: (request: IncomingMessage) => (originProblem(request.headers, originPolicy) === undefined ? corsHeadersFor(request.headers.origin) : NO_CORS),
    maxMessageBytes: options.maxMessageBytes ?? SERVER_DEFAULTS.maxMessageBytes,
    info: () => info,
    observeCalls: (observer) => {
      observers.push(observer);
    },
    setInfo: (value) => {
      info = value;
    },
  };
}
