/**
 * The skill routes as a plain node `request` handler: no Fetch Request, no URL object, no Headers.
 * A server calls it first for every request; it answers skill routes and returns false otherwise.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AuthContext } from '@mdp/protocol';
import { extractTransportAuth, headersToMap, silentLogger, type CallHandle, type HeaderMap, type Logger, type Router } from '@mdp/core';
import { INTERNAL_ERROR, readSkill, type SkillMiss, type SkillReadOptions, type SkillReadRequest, type SkillReadResponse } from './handler.js';
import { originForm, skillTarget } from './route.js';

export interface NodeSkillsOptions extends SkillReadOptions {
  /** Reads the transport auth of a request. Default: extractTransportAuth. */
  extractAuth?: (headers: HeaderMap) => AuthContext | undefined;
  /**
   * Headers added to every answer (the server's CORS headers, for instance); `answer.readerRefused`
   * marks an answer to a reader `readerRefusal` refused (no CORS grant for it).
   */
  extraHeaders?: (request: IncomingMessage, answer: SkillReadResponse) => Readonly<Record<string, string>>;
  logger?: Logger;
  /**
   * Told of every read that found nothing (answered 404 with an empty body, the reason in its
   * headers). Default: a debug line `skills.not_found` with the reason.
   */
  onMiss?: (miss: SkillMiss) => void;
}

export function createNodeSkillsHandler(router: Router, options: NodeSkillsOptions = {}): (request: IncomingMessage, response: ServerResponse) => boolean {
  const extractAuth = options.extractAuth ?? ((headers: HeaderMap) => extractTransportAuth(headers));
  const logger = options.logger ?? silentLogger;
  const onMiss = options.onMiss ?? ((miss: SkillMiss) => logger.debug('skills.not_found', { ...miss }));

  // A reader goes away by closing its connection (an HTTP/1.1 request cannot be aborted otherwise):
  // its read's call ends at once, so a callClient still queued for the client is never delivered.
  // One listener per connection, not per read. A connection reads one skill at a time (the server
  // serves pipelined requests in turn); with several at once only the newest would be ended.
  // The call is kept beside the socket, not on it: a property of our own on some sockets gives
  // node's HTTP internals sockets of more shapes than their inline caches keep (megamorphic loads
  // on every request of every connection).
  const current = new WeakMap<Socket, CallHandle | undefined>();
  function onConnectionClose(this: Socket): void {
    const call = current.get(this);
    current.delete(this);
    if (call !== undefined) router.cancel(call);
  }
  const watch = (socket: Socket, call: CallHandle): void => {
    if (!current.has(socket)) socket.on('close', onConnectionClose);
    current.set(socket, call);
  };

  const write = (request: IncomingMessage, response: ServerResponse, answer: SkillReadResponse): void => {
    // Answered: the connection no longer waits for this call (nor keeps it alive while idle).
    if (current.get(request.socket) !== undefined) current.set(request.socket, undefined);
    if (answer.miss) onMiss(answer.miss);
    if (response.destroyed || response.headersSent) return;
    let extra: Readonly<Record<string, string>> | undefined;
    try {
      extra = options.extraHeaders?.(request, answer);
      response.writeHead(answer.status, extra ? { ...answer.headers, ...extra } : answer.headers);
    } catch (error) {
      // Nothing was sent yet; never leave the reader waiting on an answer that could not be written.
      logger.error('skills.write_failed', { error });
      try {
        response.writeHead(INTERNAL_ERROR.status, { ...extra, ...INTERNAL_ERROR.headers });
      } catch {
        response.writeHead(INTERNAL_ERROR.status, INTERNAL_ERROR.headers);
      }
      response.end(INTERNAL_ERROR.body);
      return;
    }
    response.end(answer.body);
  };

  return (request, response) => {
    const target = skillTarget(originForm(request.url ?? '/'));
    if (target === undefined) return false;
    // From `rawHeaders`: node's `headers` keeps only the first of some repeated headers.
    const headers = headersToMap(request.rawHeaders);
    const read: SkillReadRequest = { method: request.method ?? 'GET', pathname: target.pathname, query: target.query, headers, auth: extractAuth(headers) };
    try {
      const call = readSkill(router, read, options, (answer) => write(request, response, answer));
      if (call !== undefined) watch(request.socket, call);
    } catch (error) {
      logger.error('skills.read_failed', { error });
      write(request, response, INTERNAL_ERROR);
    }
    return true;
  };
}
