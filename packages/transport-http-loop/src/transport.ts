/**
 * The HTTP loop routes (SPEC §6), relative to their mount point (`/mdp/http-loop`):
 *
 *   POST /connect     {} or empty          → 200 {sessionId}
 *   POST /send        {message}            → 202 {ok: true}
 *   GET  /poll?waitMs=                     → 200 {message} | 204 on time-out
 *   POST /disconnect                       → 204
 *
 * Later calls name their session by header `x-mdp-session-id` or query `sessionId`; a missing or
 * unknown session is 404 with an empty body, a malformed request 400 `{error}`.
 */
import { Hono, type Context } from 'hono';
import { MdpError, extractTransportAuth, headersToMap, silentLogger, type HeaderMap, type Logger, type Router } from '@mdp/core';
import { parseClientMessage, type AuthContext, type ParseResult, type ClientToServerMessage } from '@mdp/protocol';
import { parseJsonObject, readBodyText } from './body.js';
import { isResponseLive, nodeResponseOf, watchDelivery } from './delivery.js';
import { LoopSessionRegistry, type LoopSession } from './registry.js';
import { SESSION_ID_HEADER, SESSION_ID_QUERY, readSessionId } from './session-id.js';
import { resolveWaitMs } from './wait.js';

export interface HttpLoopOptions {
  /** How long a poll waits when it gives no valid `waitMs`, ms. Default 25000. */
  longPollTimeoutMs?: number;
  /** Largest accepted request body, bytes. Default 1 MiB (1048576). */
  maxBodyBytes?: number;
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /** Whether a connect with this transport auth opens a session; refused ones get 401. Default: all. */
  authorize?: (auth: AuthContext | undefined) => boolean;
  logger?: Logger;
}

export const HTTP_LOOP_DEFAULTS = {
  longPollTimeoutMs: 25_000,
  maxBodyBytes: 1_048_576,
} as const;

export interface HttpLoopTransport {
  /** The routes; mount with `app.route('/mdp/http-loop', transport.app)`. */
  readonly app: Hono;
  /** HTTP loop sessions currently open. */
  readonly sessionCount: number;
  /** End every session (pending calls fail) and answer waiting polls. Idempotent. */
  close(): Promise<void>;
}

/** Parse the `message` of a send body; the error names the offending field (`message.client.id: …`). */
function parseMessage(input: unknown): ParseResult<ClientToServerMessage> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, error: 'message: must be a JSON object', path: undefined };
  }
  const parsed = parseClientMessage(input);
  if (parsed.ok) return parsed;
  return { ok: false, error: parsed.path ? `message.${parsed.error}` : `message: ${parsed.error}`, path: parsed.path };
}


export function createHttpLoopTransport(router: Router, options: HttpLoopOptions = {}): HttpLoopTransport {
  const longPollTimeoutMs = options.longPollTimeoutMs ?? HTTP_LOOP_DEFAULTS.longPollTimeoutMs;
  const maxBodyBytes = options.maxBodyBytes ?? HTTP_LOOP_DEFAULTS.maxBodyBytes;
  if (!Number.isFinite(longPollTimeoutMs) || longPollTimeoutMs < 0) {
    throw new RangeError('longPollTimeoutMs must be a non-negative number of milliseconds');
  }
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes <= 0) throw new RangeError('maxBodyBytes must be a positive integer');
  const logger = (options.logger ?? silentLogger).child({ transport: 'http-loop' });
  const registry = new LoopSessionRegistry(router, logger);
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const transportAuthOf = (c: Context): AuthContext | undefined => extractAuth(headersToMap(c.req.raw.headers));
  let closed = false;
  const app = new Hono();

  // Unknown errors become a plain 500; the message is logged, never echoed.
  app.onError((error, c) => {
    logger.error('request.failed', { path: c.req.path, error });
    return c.json({ error: 'Internal error' }, 500);
  });

  /** The session a request names, or the response refusing the request. */
  const lookup = (c: Context): { readonly loop: LoopSession } | { readonly refusal: Response } => {
    const id = readSessionId(c.req.header(SESSION_ID_HEADER), c.req.queries(SESSION_ID_QUERY));
    if (id.kind === 'malformed') return { refusal: c.json({ error: id.error }, 400) };
    const loop = id.kind === 'ok' ? registry.get(id.id) : undefined;
    return loop ? { loop } : { refusal: c.body(null, 404) };
  };

  const shuttingDown = (c: Context): Response => c.json({ error: 'Server is shutting down' }, 503);

  app.post('/connect', async (c) => {
    if (closed) return shuttingDown(c);
    const body = await readBodyText(c.req.raw, maxBodyBytes);
    if (!body.ok) return c.json({ error: body.error }, body.status);
    const parsed = parseJsonObject(body.text, true);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    if (closed) return shuttingDown(c);
    const auth = transportAuthOf(c);
    if (options.authorize && !options.authorize(auth)) return c.json({ error: 'Unauthorized' }, 401);
    try {
      const { session } = registry.open(auth);
      return c.json({ sessionId: session.id }, 200);
    } catch (error) {
      if (error instanceof MdpError && error.code === 'not_ready') return shuttingDown(c);
      throw error;
    }
  });

  app.post('/send', async (c) => {
    const found = lookup(c);
    if ('refusal' in found) return found.refusal;
    const { session } = found.loop;
    session.touch(transportAuthOf(c) ?? null);
    const body = await readBodyText(c.req.raw, maxBodyBytes);
    if (!body.ok) {
      // Like a websocket frame over the limit (1009), an oversized send ends the session: the
      // message (often a call result) is lost, so its pending calls fail now instead of timing out.
      if (body.status === 413) registry.end(session.id, 'message over the size limit');
      return c.json({ error: body.error }, body.status);
    }
    const parsed = parseJsonObject(body.text, false);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    if (!('message' in parsed.value)) return c.json({ error: 'message: required' }, 400);
    const message = parseMessage(parsed.value.message);
    if (!message.ok) return c.json({ error: message.error }, 400);
    // The session may have ended while the body was read.
    if (session.closed) return c.body(null, 404);
    try {
      session.handle(message.value);
    } catch (error) {
      if (error instanceof MdpError) return session.closed ? c.body(null, 404) : c.json({ error: error.message }, 400);
      throw error;
    }
    return c.json({ ok: true }, 202);
  });

  /*
   * Long poll. A message leaves the queue only for a response that is still live, and comes back
   * to the head of the queue when that response closes before it was fully written:
   *
   *   poll ─▶ take(waitMs) ─┬─ message ─▶ client still there? ─ yes ─▶ 200 {message} ─▶ finished? ─ no ─▶ putBack
   *                         │                                  └ no ──▶ putBack, 204
   *                         └─ time-out / newer poll / closed / client gone ─▶ 204
   */
  app.get('/poll', async (c) => {
    // Hono runs GET handlers for HEAD and drops the body: a HEAD poll would swallow a message.
    if (c.req.method === 'HEAD') return c.body(null, 405, { Allow: 'GET' });
    const found = lookup(c);
    if ('refusal' in found) return found.refusal;
    const { session, mailbox } = found.loop;
    session.touch(transportAuthOf(c) ?? null);
    const waitMs = resolveWaitMs(c.req.query('waitMs'), longPollTimeoutMs);
    const signal = c.req.raw.signal;
    const response = nodeResponseOf(c.env);
    const isLive = (): boolean => !signal.aborted && (response === undefined || isResponseLive(response));
    logger.debug('poll.start', { sessionId: session.id, waitMs, queued: mailbox.size });
    const result = await mailbox.take({ waitMs, signal, isLive });
    // The client was there for the whole wait: that counts as activity too.
    if (!session.closed && isLive()) session.touch();
    if (result.message === undefined) {
      logger.debug(result.reason === 'abandoned' ? 'poll.abandoned' : 'poll.empty', { sessionId: session.id, reason: result.reason });
      return c.body(null, 204);
    }
    const { message } = result;
    if (!isLive()) {
      mailbox.putBack(message);
      logger.debug('poll.abandoned', { sessionId: session.id, reason: 'abandoned' });
      return c.body(null, 204);
    }
    if (response) {
      watchDelivery(response, () => {
        mailbox.putBack(message);
        logger.info('poll.requeued', { sessionId: session.id, type: message.type });
      });
    }
    return c.json({ message }, 200);
  });

  app.post('/disconnect', (c) => {
    const id = readSessionId(c.req.header(SESSION_ID_HEADER), c.req.queries(SESSION_ID_QUERY));
    if (id.kind === 'malformed') return c.json({ error: id.error }, 400);
    if (id.kind === 'ok') registry.end(id.id, 'client disconnected');
    return c.body(null, 204);
  });

  return {
    app,
    get sessionCount() {
      return registry.size;
    },
    async close() {
      if (closed) return;
      closed = true;
      registry.endAll('transport closed');
    },
  };
}
