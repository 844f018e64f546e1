/**
 * The shared part every feature gets (feature.ts): router, logger, auth gate, limits; and what the
 * server itself keeps of its options, checked before anything listens: the bound host, TLS, limits.
 */
import type { IncomingMessage } from 'node:http';
import {
  InflightBudget,
  Router,
  createAuthGate,
  createLogger,
  createTenancy,
  createTokenPolicy,
  credentialedOriginProblem,
  originPolicyFor,
  originProblem,
  bearerChallenge,
  insufficientScopeChallenge,
  type AuthPolicy,
  type CallRecord,
  type CookieKeyring,
  type Logger,
  type ScopeGuard,
} from '@mdp/core';
import { createAccessTokens, trustedUrlProblem, type AccessTokens } from './access-tokens.js';
import { createTeamPolicy } from './team-auth.js';
import { clusterAuthProblem } from './cluster.js';
import { CookieKeysError, fileKeyring } from './cookie-keys.js';
import { NO_CORS, corsHeadersFor } from './cors.js';
import type { ListeningInfo, ServerContext } from './feature.js';
import { httpLimitsProblem } from './http-limits.js';
import { SERVER_DEFAULTS, serverLimits, type MdpServerOptions } from './settings/options.js';
import { TENANCY_NEEDS_POLICY } from './settings/tenancy.js';
import { TlsState } from './tls.js';

/** Why `cookieSameSite: 'none'` is refused without TLS. */
export const SAME_SITE_NONE_NEEDS_TLS =
  'cookie SameSite=None needs TLS: browsers keep such a cookie only when it is Secure, and a Secure cookie only comes over HTTPS; give a TLS key and certificate, or keep SameSite=Lax';

export interface OwnedContext extends ServerContext {
  /** Whether an auth policy guards the server. */
  readonly guarded: boolean;
  /** The address the server binds (`MdpServerOptions.host`). */
  readonly bindHost: string;
  /** The listener's TLS (its files read and checked), or undefined for plain HTTP. */
  readonly tls: TlsState | undefined;
  /** The limits of each part of the server, defaults filled in and checked. */
  readonly limits: ReturnType<typeof serverLimits>;
  /** Record where the server listens (undefined when it stopped before serving). */
  setInfo(info: ListeningInfo | undefined): void;
}

/**
 * Build the context; throws RangeError for options that cannot run safely, TlsFileError for a TLS
 * file that cannot be used. `isServerId`: the server ids of this server's cluster, asked at each
 * registration (the cluster starts later): under an auth policy a member's mirrored ids are that
 * member's alone.
 */
export function createServerContext(options: MdpServerOptions, isServerId: (id: string) => boolean = () => false): OwnedContext {
  if ((options.cookieSameSite ?? SERVER_DEFAULTS.cookieSameSite) === 'none' && !options.tls) throw new RangeError(SAME_SITE_NONE_NEEDS_TLS);
  const logger = options.logger ?? createLogger({ level: options.logLevel ?? SERVER_DEFAULTS.logLevel });
  let info: ListeningInfo | undefined;
  const publicUrl = publicUrlOf(options);
  /** The server's canonical URL (RFC 8707): `publicUrl`, or its base URL once it listens. */
  const canonicalUrl = (): string | undefined => publicUrl ?? info?.urls.http;
  const accessTokens = options.authPolicy ? undefined : accessTokensOf(options, canonicalUrl, logger);
  const policy: AuthPolicy | undefined =
    options.authPolicy ??
    (accessTokens
      ? createTeamPolicy({ staticTokens: options.authTokens ?? [], staticScopes: options.accessTokens?.staticTokenScopes, accessTokens })
      : options.authTokens?.length
        ? createTokenPolicy(options.authTokens)
        : undefined);
  const clusterProblem = clusterAuthProblem(options);
  if (clusterProblem) throw new RangeError(clusterProblem);
  // Without credentials there is no principal to keep clients apart by.
  if ((options.tenancy ?? SERVER_DEFAULTS.tenancy) === 'principal' && !policy) throw new RangeError(TENANCY_NEEDS_POLICY);
  const tenancy = createTenancy({
    mode: options.tenancy ?? SERVER_DEFAULTS.tenancy,
    ...(options.sharedClients ? { sharedClients: options.sharedClients } : {}),
    ...(options.isSharedClient ? { isShared: options.isSharedClient } : {}),
  });
  const bindHost = options.host ?? SERVER_DEFAULTS.host;
  const originPolicy = originPolicyFor(bindHost, { allowedHosts: options.allowedHosts, allowedOrigins: options.allowedOrigins });
  const cookieKeys = policy && options.cookieKeyFile !== undefined ? cookieKeyringOf(options.cookieKeyFile, logger) : undefined;
  const gate = createAuthGate(policy, {
    ...(cookieKeys ? { cookieKeys } : {}),
    // The cookie a browser attaches by itself counts only on requests of the server's own site's pages.
    honoursCookie: (headers) => credentialedOriginProblem(headers, originPolicy) === undefined,
    ...(options.accessTokens?.scopeNames ? { scopeNames: options.accessTokens.scopeNames } : {}),
    // Signing teams in, clients learn who calls them (principal, scopes, issuer, subject), never the token.
    forwardCaller: accessTokens !== undefined,
    forwardCredential: accessTokens !== undefined && options.accessTokens?.forwardToken === true,
  });
  // Where agents learn how to sign in (RFC 9728), named in every 401 and 403 of a server that takes access tokens.
  const resourceMetadata = (resourcePath = ''): string | undefined => {
    const base = accessTokens ? canonicalUrl() : undefined;
    return base === undefined ? undefined : `${base}${PROTECTED_RESOURCE_PATH}${resourcePath}`;
  };
  const scopeGuard: ScopeGuard | undefined = policy && {
    missingScope: gate.missingScope,
    unauthorized: () => bearerChallenge(resourceMetadata()),
    forbidden: (scope) => insufficientScopeChallenge(scope, resourceMetadata()),
  };
  const observers: Array<(record: CallRecord) => void> = [];
  const limits = serverLimits(options);
  const router = new Router({
    ...limits.router,
    registerScope: gate.scopeNames.register,
    isServerId,
    logger,
    onCallEnd: (record) => {
      for (let i = 0; i < observers.length; i++) (observers[i] as (record: CallRecord) => void)(record);
    },
  });
  // Read and checked now: a bad file stops the server before anything listens.
  const tls = options.tls ? new TlsState(options.tls, logger) : undefined;
  const httpProblem = httpLimitsProblem(limits.http);
  if (httpProblem) throw new RangeError(httpProblem);
  const maxMessageBytes = options.maxMessageBytes ?? SERVER_DEFAULTS.maxMessageBytes;
  const maxInflightBytes = options.maxInflightBytes ?? SERVER_DEFAULTS.maxInflightBytes;
  // Else the largest message allowed, arriving in chunks (each charged beyond its bytes), might never fit.
  if (maxInflightBytes < 2 * maxMessageBytes)
    throw new RangeError(`maxInflightBytes (${maxInflightBytes}) must be at least twice maxMessageBytes (${maxMessageBytes})`);
  const inflight = new InflightBudget(maxInflightBytes, { logger });
  return {
    router,
    logger,
    gate,
    guarded: policy !== undefined,
    accessTokens,
    scopeGuard,
    canonicalUrl,
    resourceMetadata,
    bindHost,
    tls,
    limits,
    extractAuth: gate.extract,
    authorize: policy ? gate.allows : undefined,
    principalOf: gate.principalOf,
    tenancy,
    viewerOf: policy ? (auth) => ({ principal: gate.principalOf(auth) }) : () => undefined,
    corsFor: (request: IncomingMessage) => corsHeadersFor(request.headers.origin),
    originPolicy,
    guardedCorsFor: (request: IncomingMessage) =>
      originProblem(request.headers, originPolicy) === undefined ? corsHeadersFor(request.headers.origin) : NO_CORS,
    maxMessageBytes,
    inflight,
    info: () => info,
    observeCalls: (observer) => {
      observers.push(observer);
    },
    setInfo: (value) => {
      info = value;
    },
  };
}

/**
 * The cookie keys in `file`, or undefined (a key of the policy's own) when no file can be stored
 * there, which is said once. A file that must not be trusted or cannot be read throws (nothing
 * listens yet): it needs someone to look at it.
 */
function cookieKeyringOf(file: string, logger: Logger): CookieKeyring | undefined {
  try {
    return fileKeyring(file, { logger });
  } catch (error) {
    if (!(error instanceof CookieKeysError) || error.kind !== 'unstorable') throw error;
    logger.warn('auth.cookie_keys_unavailable', {
      error: error.message,
      message: 'mdp_auth cookies are sealed with a key of this process: they end when it stops, and other servers refuse them',
    });
    return undefined;
  }
}

/** Where a server publishes its protected resource metadata (RFC 9728 §3). */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/** `publicUrl` checked and without a trailing slash; throws RangeError for one that cannot be. */
function publicUrlOf(options: MdpServerOptions): string | undefined {
  if (options.publicUrl === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(options.publicUrl);
  } catch {
    throw new RangeError(`public URL is not a URL: ${JSON.stringify(options.publicUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`public URL must be http or https: ${JSON.stringify(options.publicUrl)}`);
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new RangeError(`public URL takes no query, fragment or user: ${JSON.stringify(options.publicUrl)}`);
  }
  return url.href.replace(/\/+$/, '');
}

const WILDCARD = new Set(['0.0.0.0', '::', '']);

/**
 * The access tokens the server takes, or undefined without an issuer. Throws RangeError for
 * settings that cannot work: an issuer or key set URL that is not https (but to this machine), or a
 * wildcard bind with no audience (no one URL names the server).
 */
function accessTokensOf(options: MdpServerOptions, canonicalUrl: () => string | undefined, logger: Logger): AccessTokens | undefined {
  const config = options.accessTokens;
  if (!config) return undefined;
  const problem =
    trustedUrlProblem(config.issuer, 'the issuer') ?? (config.jwksUrl === undefined ? undefined : trustedUrlProblem(config.jwksUrl, 'the key set URL'));
  if (problem) throw new RangeError(problem);
  if (config.audiences?.length === 0) throw new RangeError('access tokens need at least one audience');
  if (!config.audiences && options.publicUrl === undefined && WILDCARD.has(options.host ?? SERVER_DEFAULTS.host)) {
    throw new RangeError('a server bound to every address takes access tokens only with an audience or a public URL: no one URL names it');
  }
  const fixed = config.audiences;
  return createAccessTokens({
    issuer: config.issuer,
    jwksUrl: config.jwksUrl,
    // RFC 8707: the server's canonical URL; agents that follow the /mcp metadata ask for that one.
    audiences: fixed
      ? () => fixed
      : () => {
          const base = canonicalUrl();
          return base === undefined ? [] : [base, `${base}/mcp`];
        },
    clockSkewS: config.clockSkewS,
    refreshIntervalMs: config.refreshIntervalMs,
    cooldownMs: config.cooldownMs,
    logger,
  });
}
