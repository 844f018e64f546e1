/**
 * Getting the server's own port back (SPEC §10 *beyond*): a server started on a port that a member
 * of its cluster holds as a second port (the default port, served by a leader after this server
 * went away) asks that member to let go, then binds. The decisions are the pure machine of
 * @mdp/cluster (port-claim.ts); this file binds, probes /mdp/meta, sends the request and keeps the
 * one timer. The holder's side is features/default-port.ts.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  PORT_CLAIM_DEFAULTS,
  PORT_RELEASE_PATH,
  holderOf,
  probeMeta,
  startClaim,
  stepClaim,
  type AskOutcome,
  type ClaimConfig,
  type ClaimEffect,
  type ClaimEvent,
  type ClaimResult,
  type ClaimState,
  type PeerTls,
  type PortReleaseRequest,
  type ProbeResult,
} from '@mdp/cluster';
import { systemClock, urlHost, type Clock, type Logger } from '@mdp/core';
import type { MdpClusterOptions } from './cluster.js';

/** Time one probe of /mdp/meta, or one request to the holder, may take, ms. */
const ASK_TIMEOUT_MS = 1000;

/** Largest answer read from the holder, bytes. */
const MAX_ANSWER_BYTES = 4096;

/**
 * The system clock with timers that keep the process alive: the claim is the server's start, and
 * while it waits between two binds nothing else (no listener yet) would. The system clock's own
 * timers never do, and the process would end mid-start.
 */
const startClock: Clock = { ...systemClock, setTimeout: (callback, ms) => setTimeout(callback, ms) };

export interface PortClaimOptions {
  readonly host: string;
  readonly port: number;
  /** This server's cluster id: only a member of it is asked. */
  readonly clusterId: string;
  /** The id this server will have on that port. */
  readonly serverId: string;
  /** The server speaks TLS: the holder is asked over HTTPS. */
  readonly secure: boolean;
  /** TLS of the request to the holder (the cluster's own, as a control link's). */
  readonly tls?: () => PeerTls;
  /** The request body proving this server's cluster secret (`ClusterFeature.portReleaseRequest`). */
  releaseRequest(to: string, port: number): PortReleaseRequest;
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly config?: Partial<ClaimConfig>;
  /** Test seams: GET /mdp/meta at a URL, and the request to the holder. Default: over the network. */
  readonly probe?: (url: string) => Promise<ProbeResult>;
  readonly ask?: (url: string, body: PortReleaseRequest) => Promise<AskOutcome>;
}

/**
 * Claim the port with `bindOnce` (one bind attempt; rejects with EADDRINUSE while held). Resolves
 * with the address once bound, or `undefined` when the port stays held (the caller reports the bind
 * error it already has); rejects with any other bind error.
 */
export function claimPort(options: PortClaimOptions, bindOnce: () => Promise<AddressInfo>): Promise<AddressInfo | undefined> {
  const clock = options.clock ?? startClock;
  const { logger, port } = options;
  const config: ClaimConfig = { ...PORT_CLAIM_DEFAULTS, ...options.config };
  const target = urlHost(['0.0.0.0', '::', '[::]', ''].includes(options.host) ? '127.0.0.1' : options.host);
  const scheme = options.secure ? 'https' : 'http';
  const probe =
    options.probe ?? ((url: string) => probeMeta(url, { timeoutMs: ASK_TIMEOUT_MS, ...(options.secure ? { tls: { rejectUnauthorized: false } } : {}) }));
  const askHolder = options.ask ?? ((url: string, body: PortReleaseRequest) => ask(url, body, options.tls));

  return new Promise((resolve, reject) => {
    let state: ClaimState;
    let timer: unknown;
    let finished = false;

    const finish = (outcome: () => void): void => {
      if (finished) return;
      finished = true;
      clock.clearTimeout(timer);
      outcome();
    };

    const feed = (event: ClaimEvent): void => {
      if (finished) return;
      handle(stepClaim(state, event, clock.now()));
    };

    const handle = (result: ClaimResult): void => {
      state = result.state;
      clock.clearTimeout(timer);
      if (result.wakeAt !== undefined) timer = clock.setTimeout(() => feed({ type: 'tick' }), Math.max(0, result.wakeAt - clock.now()));
      for (const effect of result.effects) run(effect);
    };

    const run = (effect: ClaimEffect): void => {
      switch (effect.type) {
        case 'look':
          // Whoever answers there: any certificate will do, the question is only who holds the port.
          void probe(`${scheme}://${target}:${port}`).then((result) => feed({ type: 'looked', holder: holderOf(result, port, options.clusterId) }));
          return;
        case 'ask':
          logger.info('server.port_claim_asked', {
            port,
            holder: effect.holder.id,
            message: 'a member of this cluster serves this port as a second port; asking it to let go',
          });
          void askHolder(`${effect.holder.url}${PORT_RELEASE_PATH}`, options.releaseRequest(effect.holder.id, port)).then((outcome) => {
            if (outcome.kind !== 'released') logger.debug('server.port_claim_answer', { port, holder: effect.holder.id, outcome });
            feed({ type: 'asked', outcome });
          });
          return;
        case 'bind':
          bindOnce().then(
            (address) => {
              feed({ type: 'bound' });
              if (state.asked)
                logger.info('server.port_claimed', { port, from: state.asked.id, message: 'the port is back: the member that served it let go' });
              finish(() => resolve(address));
            },
            (error: NodeJS.ErrnoException) => {
              if (error.code === 'EADDRINUSE') feed({ type: 'inUse' });
              else finish(() => reject(error));
            },
          );
          return;
        case 'giveUp':
          // Worth a warning once a member was asked; a port simply held by something else is the
          // bind error's to tell.
          logger[state.asked ? 'warn' : 'debug']('server.port_claim_failed', { port, reason: effect.reason });
          finish(() => resolve(undefined));
          return;
      }
    };

    // The first bind failed already: the claim starts by looking at who holds the port.
    handle(startClaim(clock.now(), config));
  });
}

/**
 * POST `body` to `url` and say how it ended, within ASK_TIMEOUT_MS in all: a holder that answers a
 * byte at a time (an idle time-out never fires on it) must not hold the server's start. Never rejects.
 */
function ask(url: string, body: PortReleaseRequest, tls: (() => PeerTls) | undefined): Promise<AskOutcome> {
  return new Promise((done) => {
    let timer: NodeJS.Timeout | undefined;
    const resolve = (outcome: AskOutcome): void => {
      clearTimeout(timer);
      done(outcome);
    };
    const text = JSON.stringify(body);
    const secure = url.startsWith('https:');
    const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
    const onAnswer = (response: IncomingMessage): void => {
      let answer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (answer.length < MAX_ANSWER_BYTES) answer += chunk;
      });
      response.on('error', () => resolve({ kind: 'unreachable', reason: 'the answer was cut' }));
      response.on('end', () => resolve(askOutcome(response.statusCode ?? 0, answer)));
    };
    const options = { method: 'POST', headers, timeout: ASK_TIMEOUT_MS };
    const request = secure ? httpsRequest(url, { ...options, ...tlsOptions(tls) }, onAnswer) : httpRequest(url, options, onAnswer);
    const late = (): void => {
      resolve({ kind: 'unreachable', reason: `no answer within ${ASK_TIMEOUT_MS} ms` });
      request.destroy();
    };
    timer = setTimeout(late, ASK_TIMEOUT_MS);
    request.on('timeout', late);
    request.on('error', (error) => resolve({ kind: 'unreachable', reason: error.message }));
    request.end(text);
  });
}

/** The holder's TLS check: the cluster's CA, as for a control link; node's CAs without one. */
function tlsOptions(tls: (() => PeerTls) | undefined): Record<string, unknown> {
  const current = tls?.();
  if (!current) return {};
  return {
    ...(current.ca !== undefined ? { ca: current.ca } : {}),
    ...(current.cert !== undefined && current.key !== undefined ? { cert: current.cert, key: current.key } : {}),
    ...(current.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
  };
}

/**
 * What an answer says: 200 released; 403 our proof refused, 404 or 405 a server without this
 * request (an older version), 400 a request it cannot read: refused; 409 (it does not hold the
 * port as a second port, as far as it knows now) and anything else: look again later.
 */
export function askOutcome(status: number, answer: string): AskOutcome {
  const error = errorOf(answer);
  if (status === 200) return { kind: 'released' };
  if (status === 400 || status === 403 || status === 404 || status === 405) return { kind: 'refused', reason: `HTTP ${status}${error ? `: ${error}` : ''}` };
  return { kind: 'busy', reason: `HTTP ${status}${error ? `: ${error}` : ''}` };
}

function errorOf(answer: string): string | undefined {
  try {
    const parsed = JSON.parse(answer) as { error?: unknown };
    return typeof parsed.error === 'string' ? parsed.error.slice(0, 200) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How a server gets its own port back, or `undefined` when it never asks: a server in no cluster
 * (standalone, or no cluster options), whose port nobody of its cluster can hold.
 */
export function portClaimOf(params: {
  readonly cluster: MdpClusterOptions | undefined;
  readonly clusterId: string;
  readonly host: string;
  readonly secure: boolean;
  readonly tls?: (() => PeerTls) | undefined;
  readonly logger: Logger;
  releaseRequest(to: string, port: number, serverId: string): PortReleaseRequest;
}): ((port: number, serverId: string) => (bindOnce: () => Promise<AddressInfo>) => Promise<AddressInfo | undefined>) | undefined {
  if (params.cluster === undefined || (params.cluster.mode ?? 'auto') === 'standalone') return undefined;
  return (port, serverId) => (bindOnce) =>
    claimPort(
      {
        host: params.host,
        port,
        clusterId: params.clusterId,
        serverId,
        secure: params.secure,
        ...(params.tls ? { tls: params.tls } : {}),
        releaseRequest: (to, asked) => params.releaseRequest(to, asked, serverId),
        logger: params.logger,
      },
      bindOnce,
    );
}
