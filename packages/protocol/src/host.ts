/**
 * The host contract's wire shapes (SPEC §12): what programs and agents send to list clients and
 * paths and to call paths, and what they get back. The same shapes travel over HTTP (the host
 * API), MCP (the generic tools) and cluster RPC, so a mixed cluster answers an agent the same way.
 * Requests are parsed with these schemas wherever they arrive; unknown fields are dropped.
 */
import * as v from 'valibot';
import { concretePathProblem } from './paths.js';
import {
  AuthContextSchema,
  ENDPOINT_METHODS,
  NonEmptyString,
  StringRecordSchema,
  type ClientDescriptor,
  type EndpointMethod,
  type PathDescriptor,
  type SerializedError,
} from './schemas.js';

const SearchSchema = v.optional(v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters')));

/** Most items one page of a listing may hold; a `limit` above it is refused. */
export const MAX_LIST_LIMIT = 1000;
/** Longest `cursor`, characters: a cursor names one client id and one path, each cut to a bounded key. */
export const MAX_CURSOR_LENGTH = 4096;

/**
 * Paging (SPEC §12.6): `limit` items at most (default: the answering server's page size), from
 * where `cursor` (the `nextCursor` of the page before) left off. The cursor is opaque; its
 * content is checked by whoever answers.
 */
const pageFields = {
  limit: v.optional(
    v.pipe(
      v.number(),
      v.integer('must be a whole number'),
      v.minValue(1, 'must be at least 1'),
      v.maxValue(MAX_LIST_LIMIT, `must be at most ${MAX_LIST_LIMIT}`),
    ),
  ),
  cursor: v.optional(v.pipe(v.string(), v.nonEmpty('must not be empty'), v.maxLength(MAX_CURSOR_LENGTH, `must be at most ${MAX_CURSOR_LENGTH} characters`))),
};

export const ListClientsRequestSchema = v.object({
  /** Case-insensitive substring of id, name, description, paths, methods, descriptions, content types. */
  search: SearchSchema,
  ...pageFields,
});

export const ListPathsRequestSchema = v.object({
  clientId: v.optional(NonEmptyString),
  search: SearchSchema,
  /** List paths of at most this depth (SPEC §12: segments − 1, at least 1). */
  depth: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'))),
  ...pageFields,
});

const ConcretePathSchema = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = concretePathProblem(dataset.value);
    if (problem) addIssue({ message: `path ${problem}` });
  }),
);

const callFields = {
  method: v.picklist(ENDPOINT_METHODS, 'method must be one of GET, POST, PUT, PATCH, DELETE'),
  path: ConcretePathSchema,
  query: v.optional(StringRecordSchema),
  body: v.optional(v.unknown()),
  headers: v.optional(StringRecordSchema),
  auth: v.optional(AuthContextSchema),
};

export const CallPathRequestSchema = v.object({ clientId: NonEmptyString, ...callFields });

export const CallPathsRequestSchema = v.object({
  /** Without it: every client with a descriptor matching method and path. */
  clientIds: v.optional(
    v.pipe(
      v.array(NonEmptyString),
      v.minLength(1, 'must name at least one client'),
      v.maxLength(1000, 'must name at most 1000 clients'),
      // Each id is one call carrying the whole body: a repeated id would multiply one request.
      v.check((ids) => new Set(ids).size === ids.length, 'must not name a client twice'),
    ),
  ),
  ...callFields,
});

export type ListClientsRequest = v.InferOutput<typeof ListClientsRequestSchema>;
export type ListPathsRequest = v.InferOutput<typeof ListPathsRequestSchema>;
export type CallPathRequest = v.InferOutput<typeof CallPathRequestSchema>;
export type CallPathsRequest = v.InferOutput<typeof CallPathsRequestSchema>;

/** How a listed client is connected. */
export interface ClientConnection {
  readonly mode: 'ws' | 'http-loop' | (string & {});
  /** Over TLS. */
  readonly secure: boolean;
  readonly authSource: 'none' | 'message' | 'transport' | 'transport+message';
}

/** A client as `listClients` shows it: its descriptor and how it is connected. */
export type ListedClient = ClientDescriptor & {
  readonly status: 'online';
  /** ISO 8601. */
  readonly connectedAt: string;
  readonly lastSeenAt: string;
  readonly connection: ClientConnection;
  /** Other ids that reach this client (its bare id, for a mirrored client). */
  readonly aliases: readonly string[];
};

/** A path as `listPaths` shows it. */
export type ListedPath = PathDescriptor & { readonly clientId: string; readonly clientName: string };

/**
 * One page of a listing. `nextCursor` is there when the listing goes on: ask again with it as
 * `cursor`. A page may hold fewer items than its `limit` (even none) and still have a
 * `nextCursor`: the server bounds the work and the bytes of each page, so callers loop until there
 * is no `nextCursor`.
 */
export interface ListClientsResult {
  readonly clients: ListedClient[];
  readonly nextCursor?: string;
}
export interface ListPathsResult {
  readonly paths: ListedPath[];
  readonly nextCursor?: string;
}

/**
 * The outcome of one call. `source` (this server's addition) tells whether the client answered
 * `ok: false` or the server gave up (unknown client, time-out, client gone); it decides the HTTP
 * status of a failure.
 */
export type CallResult =
  | { readonly ok: true; readonly data?: unknown }
  | { readonly ok: false; readonly error: SerializedError; readonly source?: 'client' | 'server' };

export type CallManyEntry = { readonly clientId: string } & CallResult;

export interface CallPathsResult {
  readonly results: CallManyEntry[];
}

/** The HTTP-like method a path descriptor is called with: its own for an endpoint, GET otherwise. */
export function methodOf(descriptor: PathDescriptor): EndpointMethod {
  return descriptor.type === 'endpoint' ? descriptor.method : 'GET';
}

/** A path's depth (SPEC §12): segments − 1, at least 1 (`/a/skill.md` is 1, `/a/b/skill.md` 2). */
export function pathDepth(path: string): number {
  return Math.max(1, path.split('/').length - 2);
}
