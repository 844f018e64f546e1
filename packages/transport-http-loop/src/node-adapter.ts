/**
 * The routes on a bare node `request` listener, with no Fetch objects: the session id from
 * `req.headers` (the query is read only when the header is absent or the query names
 * `sessionId`), the transport auth from `req.rawHeaders`, bodies straight from the
 * `IncomingMessage`, an abandoned poll seen by the response's 'close' event, answers written with
 * one `writeHead` + `end`.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { headersToMap, readNodeBody, type BodyResult, type HeaderMap, type InflightBudget, type Logger } from '@mdp/core';
import { isResponseLive, watchDelivery } from './delivery.js';
import type { PollConnection } from './mailbox.js';
import { queryValues } from './query.js';
import { INTERNAL_ERROR, type LoopRequest, type LoopResponse, type LoopRoutes } from './routes.js';
import { SESSION_ID_HEADER } from './session-id.js';

/** Headers the server adds to every answer (CORS), computed from the request when it is answered. */
export type NodeExtraHeaders = (req: IncomingMessage) => Readonly<Record<string, string>> | undefined;

/** Serve one HTTP loop request; `subPath` is the path below the mount point, e.g. `'/poll'`. */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, subPath: string) => void;

/** One node request as the routes see it; it is also the poll's connection. */
class NodeLoopRequest implements LoopRequest, PollConnection {
  readonly method: string;
  readonly sessionHeader: string | undefined;
  readonly secure: boolean;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly inflight: InflightBudget | undefined,
  ) {
    this.method = req.method ?? 'GET';
    // node joins a repeated custom header with ', ', as Fetch Headers do.
    const header = req.headers[SESSION_ID_HEADER];
    this.sessionHeader = Array.isArray(header) ? header.join(', ') : header;
    // A TLS socket says so; a plain one has no `encrypted` at all.
    this.secure = (req.socket as { encrypted?: boolean }).encrypted === true;
  }

  query(name: string): readonly string[] | undefined {
    const url = this.req.url ?? '';
    const mark = url.indexOf('?');
    return mark < 0 ? undefined : queryValues(url.slice(mark + 1), name);
  }

  /**
   * The map the Hono routes read from Fetch headers: node's own `req.headers` (made once per request,
   * and read for CORS anyway), which joins repeated headers the same way, unless the request repeats
   * `Authorization`: node keeps only the first of those, the credential check must see them all.
   */
  headers(): HeaderMap {
    const raw = this.req.rawHeaders;
    return repeatsAuthorization(raw) ? headersToMap(raw) : this.req.headers;
  }

  readBody(maxBytes: number): Promise<BodyResult> {
    return readNodeBody(this.req, maxBytes, this.inflight);
  }

  connection(): PollConnection {
    return this;
  }

  remoteAddress(): string | undefined {
    return this.req.socket.remoteAddress;
  }

  isLive(): boolean {
    return isResponseLive(this.res);
  }

  onGone(listener: () => void): () => void {
    const res = this.res;
    res.once('close', listener);
    return () => {
      res.off('close', listener);
    };
  }
}

/** Whether `Authorization` comes more than once in node's `rawHeaders` (name, value, name, value, …). */
function repeatsAuthorization(raw: readonly string[]): boolean {
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length !== 13 || name.toLowerCase() !== 'authorization') continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

function headersOf(response: LoopResponse, body: string | undefined): OutgoingHttpHeaders {
  let headers: OutgoingHttpHeaders;
  if (body !== undefined) {
    headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (response.headers) headers = { ...response.headers, ...headers };
  } else if (response.status === 204) {
    return response.headers ?? {};
  } else {
    // Without a length node would frame an empty body as chunked.
    headers = { ...response.headers, 'content-length': 0 };
  }
  // The rest of an oversized body is not read: close the connection once the 413 is written
  // instead of letting node drain an unbounded body for keep-alive.
  if (response.status === 413) headers.connection = 'close';
  return headers;
}

/** `inflight`: the budget bodies count against while they are read (core's `InflightBudget`). */
export function createNodeHandler(routes: LoopRoutes, logger: Logger, extraHeaders: NodeExtraHeaders | undefined, inflight?: InflightBudget): NodeHandler {
  const write = (req: IncomingMessage, res: ServerResponse, response: LoopResponse): void => {
    const { onLost, body } = response;
    if (onLost && !isResponseLive(res)) {
      onLost();
      return;
    }
    if (res.destroyed || res.headersSent) return;
    try {
      let headers = headersOf(response, body);
      const extra = extraHeaders?.(req);
      if (extra) headers = { ...extra, ...headers };
      res.writeHead(response.status, headers);
    } catch (error) {
      // Nothing was written: a polled message stays in the queue.
      onLost?.();
      throw error;
    }
    if (onLost) watchDelivery(res, onLost);
    res.end(body);
  };

  // Unknown errors become a plain 500; the message is logged, never echoed.
  const fail = (req: IncomingMessage, res: ServerResponse, subPath: string, error: unknown): void => {
    logger.error('request.failed', { path: subPath, error });
    try {
      if (res.headersSent) res.destroy();
      else write(req, res, INTERNAL_ERROR);
    } catch {
      res.destroy();
    }
  };

  return (req, res, subPath) => {
    try {
      const answer = routes.handle(subPath, new NodeLoopRequest(req, res, inflight));
      if (!(answer instanceof Promise)) {
        write(req, res, answer);
        return;
      }
      answer.then(
        (response) => {
          try {
            write(req, res, response);
          } catch (error) {
            fail(req, res, subPath, error);
          }
        },
        (error: unknown) => fail(req, res, subPath, error),
      );
    } catch (error) {
      fail(req, res, subPath, error);
    }
  };
}
