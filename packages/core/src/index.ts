export { INTERNAL_ERROR, MAX_RETRY_AFTER_S, MdpError, httpStatusOf, retryAfterHeader, retryAfterSeconds, retryHintMs, serializeError } from './errors.js';
export type { Refusal } from './errors.js';
export { LOG_LEVELS, createLogger, isLogLevel, silentLogger } from './logger.js';
export type { LogFields, LogLevel, Logger, LoggerOptions } from './logger.js';
export {
  AUTH_COOKIE_NAME,
  AUTH_HEADER_PREFIX,
  decodeAuthCookie,
  encodeAuthCookie,
  extractTransportAuth,
  headersToMap,
} from './auth.js';
export type { ExtractAuthOptions, HeaderMap, RequestHeaders } from './auth.js';
export { CALLER_METADATA_KEYS, createAuthGate, createTokenPolicy, credentialPrincipal } from './auth-policy.js';
export type { AuthGate, AuthGateOptions, AuthPolicy, Caller } from './auth-policy.js';
export {
  AUTH_ACTIONS,
  DEFAULT_SCOPE_NAMES,
  bearerChallenge,
  insufficientScopeChallenge,
  isScopeToken,
  missingScope,
  scopeNamesProblem,
  scopesOfClaims,
} from './scopes.js';
export type { AuthAction, ScopeGuard, ScopeNames, Scopes } from './scopes.js';
export { AUTH_COOKIE_MAX_AGE_MS, cookieKeyOf, fixedKeyring, openAuthCookie, sealAuthCookie } from './cookie-seal.js';
export type { CookieKey, CookieKeyring } from './cookie-seal.js';
export { FORWARD_AS_IS, FORWARD_WITHOUT_CREDENTIAL } from './forwarding.js';
export type { CredentialForwarding } from './forwarding.js';
export { isOpaqueOrigin, originPrincipal } from './ownership.js';
export { PathIndex } from './path-index.js';
export type { ResolvedTarget } from './path-index.js';
export { SESSION_CLOSE, closeReason } from './session.js';
export type { AuthSource, SessionInfo, SessionTransport } from './session.js';
export { ROUTER_DEFAULTS, Router, Session } from './router.js';
export { Deadlines, EXPIRE_BATCH, MAX_TIMER_MS } from './deadlines.js';
export { IdTable } from './id-table.js';
export type { Deadline } from './deadlines.js';
export { systemClock } from './clock.js';
export { Timer, TimerSet } from './timers.js';
export type { Clock } from './clock.js';
export { Admission } from './admission.js';
export type { AdmissionLimits } from './admission.js';
export type { CatalogLimits } from './catalog-limits.js';
export { setOwn } from './records.js';
export type {
  CallHandle,
  CallRecord,
  CallSignal,
  ClientEvent,
  ClientInfo,
  InvokeOptions,
  InvokeOutcome,
  InvokeRoute,
  LocatedClient,
  Maybe,
  RouterOptions,
  SessionEvent,
} from './router.js';
export { CallCancel } from './call-cancel.js';
export { RemoteCallHandle, RemoteClients, originOfPrincipal, remoteClientInfo, remoteOrigin } from './remote.js';
export type { RemoteChange, RemoteClient, RemoteDirectory, RemoteInvocation } from './remote.js';
export { Whereabouts } from './whereabouts.js';
export type { LocalClients } from './whereabouts.js';
export { FANOUT_BODY_FACTOR, REMOTE_PAGE_FETCHES, clientsSeenBy, createLocalHost, fanoutTargets, viewedBy } from './host.js';
export { LISTING_DEFAULTS, collectPages, nextTurn, positionKey } from './listing.js';
export type { ListOptions, ListingLimits } from './listing.js';
export type { CallOptions, HostApi, LocalHostOptions, SeenClient } from './host.js';
export { NO_SERVER_IDS, resolveClientId } from './aliases.js';
export { MAX_SHARED_PATTERN_CHARS, SHARED_TENANCY, TENANCY_MODES, createTenancy, sharedPatternProblem } from './tenancy.js';
export type { Tenancy, TenancyMode, TenancyOptions, TenantClient, Viewer, Visibility } from './tenancy.js';
export type { IdResolution, IsServerId } from './aliases.js';
export { credentialedOriginProblem, crossSiteWithoutOrigin, hostnameOf, isLoopbackHost, originPolicyFor, originProblem } from './origin-policy.js';
export { urlHost } from './url-host.js';
export type { OriginPolicy } from './origin-policy.js';
export { parseJsonObject, readBodyText, readNodeBody } from './http-body.js';
export { CHUNK_COST, DEFAULT_MAX_INFLIGHT_BYTES, InflightBudget, inflightCharge } from './inflight.js';
export type { InflightBudgetOptions, InflightHolder } from './inflight.js';
export { FrameProgress } from './frame-progress.js';
export { InboundFrames, countInboundFrames, inboundFramesOf } from './inbound-frames.js';
export type { BodyResult, JsonObjectResult } from './http-body.js';
export { redactUrl } from './redact.js';
export { DEFAULT_MAX_MESSAGE_BYTES, overCap, type OverCap } from './limits.js';
export { makeDirectorySync } from './make-dir.js';
