import * as v from 'valibot';
import {
  CallPathRequestSchema,
  CallPathsRequestSchema,
  ListClientsRequestSchema,
  ListPathsRequestSchema,
  type CallPathRequest,
  type CallPathsRequest,
  type ListClientsRequest,
  type ListPathsRequest,
} from './host.js';
import {
  AuthContextSchema,
  ClientDescriptorSchema,
  ClientToServerMessageSchema,
  ClusterMessageSchema,
  MetaDocumentSchema,
  PathCatalogSchema,
  SERVER_TO_CLIENT_ONLY_TYPES,
  ServerToClientMessageSchema,
  type AuthContext,
  type ClientDescriptor,
  type ClientToServerMessage,
  type ClusterMessage,
  type MetaDocument,
  type PathDescriptor,
  type ServerToClientMessage,
} from './schemas.js';

/** Outcome of parsing untrusted input: the typed value, or an error naming the offending field. */
export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string; readonly path: string | undefined };

/** Build a parser for one schema; the first issue becomes `"<dot.path>: <message>"`. */
export function parserFor<TSchema extends v.GenericSchema>(schema: TSchema): (input: unknown) => ParseResult<v.InferOutput<TSchema>> {
  return (input) => {
    const result = v.safeParse(schema, input, { abortEarly: true });
    if (result.success) return { ok: true, value: result.output };
    const issue = result.issues[0];
    const path = v.getDotPath(issue) ?? undefined;
    return { ok: false, error: path ? `${path}: ${issue.message}` : issue.message, path };
  };
}

const parseClientToServerSchema = parserFor(ClientToServerMessageSchema);
/**
 * One parser per message type, chosen by the `type` field: the same object schemas the variant
 * holds, without the variant trying each option's discriminator on every message. Unknown types
 * go through the variant, which words the error.
 */
const clientMessageParsers: ReadonlyMap<unknown, (input: unknown) => ParseResult<ClientToServerMessage>> = new Map(
  ClientToServerMessageSchema.options.map((schema) => [schema.entries.type.literal, parserFor(schema)] as const),
);

/**
 * Parse a message a client sent. A message of a type only the server sends (e.g. `callClient`) is
 * refused with an error saying so.
 */
export function parseClientMessage(input: unknown): ParseResult<ClientToServerMessage> {
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const type = (input as { type?: unknown }).type;
    const parse = clientMessageParsers.get(type);
    if (parse) return parse(input);
    if (typeof type === 'string' && SERVER_TO_CLIENT_ONLY_TYPES.has(type)) {
      return { ok: false, error: `type: ${type} is a server-to-client message`, path: 'type' };
    }
  } else {
    return { ok: false, error: 'message must be a JSON object', path: undefined };
  }
  return parseClientToServerSchema(input);
}

export const parseServerMessage: (input: unknown) => ParseResult<ServerToClientMessage> = parserFor(ServerToClientMessageSchema);
export const parseClientDescriptor: (input: unknown) => ParseResult<ClientDescriptor> = parserFor(ClientDescriptorSchema);
export const parsePathCatalog: (input: unknown) => ParseResult<PathDescriptor[]> = parserFor(PathCatalogSchema);
export const parseAuthContext: (input: unknown) => ParseResult<AuthContext> = parserFor(AuthContextSchema);
export const parseMetaDocument: (input: unknown) => ParseResult<MetaDocument> = parserFor(MetaDocumentSchema);
export const parseClusterMessage: (input: unknown) => ParseResult<ClusterMessage> = parserFor(ClusterMessageSchema);
export const parseListClientsRequest: (input: unknown) => ParseResult<ListClientsRequest> = parserFor(ListClientsRequestSchema);
export const parseListPathsRequest: (input: unknown) => ParseResult<ListPathsRequest> = parserFor(ListPathsRequestSchema);
export const parseCallPathRequest: (input: unknown) => ParseResult<CallPathRequest> = parserFor(CallPathRequestSchema);
export const parseCallPathsRequest: (input: unknown) => ParseResult<CallPathsRequest> = parserFor(CallPathsRequestSchema);
