/**
 * valibot schemas for everything that crosses the wire. Types are inferred from these schemas, so
 * the schema is the single source of truth (STYLE §4).
 */
import * as v from 'valibot';
import { isPromptPath, isSkillPath, patternProblem } from './paths.js';

// ---------------------------------------------------------------------------------------------
// Shared building blocks

/** A plain JSON object (not an array, not null). */
export const JsonObjectSchema = v.custom<Record<string, unknown>>(
  (input) => typeof input === 'object' && input !== null && !Array.isArray(input),
  'must be an object',
);

export const NonEmptyString = v.pipe(v.string(), v.nonEmpty('must not be empty'));

/** A UTF-16 surrogate without its pair: JSON can carry one (`"\ud800"`), no URL or UTF-8 text can. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * A client id: not empty, and text every URL and header can name (no lone surrogate), since skill
 * routes, MCP resource URIs and the server's guide put it in URLs (`encodeURIComponent` throws on one).
 */
export const ClientIdSchema = v.pipe(
  NonEmptyString,
  v.check((id) => !LONE_SURROGATE.test(id), 'must be well-formed Unicode (no lone surrogate)'),
);

/**
 * Deepest nesting of objects and arrays taken in the JSON a client describes itself with (an input
 * schema, its metadata, any extra field). JSON.parse takes far deeper documents than JSON.stringify
 * can write back: a catalog nested 20,000 levels deep fits in one frame and would make every
 * listing that includes it fail.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests objects and arrays at most `max` levels deep (a scalar is 0 deep, `{}` and
 * `[]` are 1). It never looks deeper than `max`, so it is safe on a value of any depth.
 */
export function jsonDepthWithin(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (max <= 0) return false;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (!jsonDepthWithin(child, max - 1)) return false;
  return true;
}

const DEPTH_MESSAGE = `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`;
const withinDepth = (value: unknown): boolean => jsonDepthWithin(value, MAX_JSON_DEPTH);

/** Any JSON value a client gives, bounded in depth. */
const ShallowValue = v.pipe(v.unknown(), v.check(withinDepth, DEPTH_MESSAGE));

/** A JSON object a client gives (an input schema, metadata), bounded in depth. */
const ShallowObject = v.pipe(JsonObjectSchema, v.check<Record<string, unknown>, string>(withinDepth, DEPTH_MESSAGE));

/** String-to-string map (headers, query, params). `v.record` alone would accept an array as `{0: …}`. */
export const StringRecordSchema = v.pipe(JsonObjectSchema, v.record(v.string(), v.string()));

const PatternSchema = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = patternProblem(dataset.value);
    if (problem) addIssue({ message: `path ${problem}` });
  }),
);

/** Error codes the server itself produces. Results from clients may carry other codes. */
export const ERROR_CODES = ['bad_request', 'not_found', 'timeout', 'transport_error', 'handler_error', 'not_ready'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const AuthContextSchema = v.pipe(
  JsonObjectSchema,
  v.object({
    scheme: v.optional(v.string()),
    token: v.optional(v.string()),
    headers: v.optional(StringRecordSchema),
    metadata: v.optional(ShallowObject),
  }),
);
export type AuthContext = v.InferOutput<typeof AuthContextSchema>;

export const SerializedErrorSchema = v.object({
  code: v.string(),
  message: v.string(),
  // Field clients put any JSON here (strings, arrays), so any value is accepted.
  details: v.optional(v.unknown()),
});
export type SerializedError = v.InferOutput<typeof SerializedErrorSchema>;

// ---------------------------------------------------------------------------------------------
// Path descriptors and client descriptor (SPEC §2)

export const ENDPOINT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type EndpointMethod = (typeof ENDPOINT_METHODS)[number];

// Unknown extra fields are kept and listed back (forward compatibility), bounded in depth like the rest.
export const EndpointDescriptorSchema = v.objectWithRest(
  {
    type: v.literal('endpoint'),
    path: v.pipe(
      PatternSchema,
      v.check((p) => !isSkillPath(p) && !isPromptPath(p), 'endpoint path must not be a skill or prompt path'),
    ),
    method: v.picklist(ENDPOINT_METHODS, 'method must be one of GET, POST, PUT, PATCH, DELETE'),
    description: v.optional(v.string()),
    inputSchema: v.optional(ShallowObject),
    outputSchema: v.optional(ShallowObject),
    contentType: v.optional(v.string()),
  },
  ShallowValue,
);

export const PromptDescriptorSchema = v.objectWithRest(
  {
    type: v.literal('prompt'),
    path: v.pipe(PatternSchema, v.check(isPromptPath, 'prompt path must end in prompt.md, PROMPT.md or .prompt.md')),
    description: v.optional(v.string()),
    inputSchema: v.optional(ShallowObject),
    outputSchema: v.optional(ShallowObject),
  },
  ShallowValue,
);

export const SkillDescriptorSchema = v.objectWithRest(
  {
    type: v.literal('skill'),
    path: v.pipe(PatternSchema, v.check(isSkillPath, 'skill path must end in skill.md, SKILL.md or .skill.md')),
    description: v.optional(v.string()),
    contentType: v.optional(v.string()),
  },
  ShallowValue,
);

export const PathDescriptorSchema = v.variant(
  'type',
  [EndpointDescriptorSchema, PromptDescriptorSchema, SkillDescriptorSchema],
  'path descriptor type must be endpoint, prompt or skill',
);
export type EndpointDescriptor = v.InferOutput<typeof EndpointDescriptorSchema>;
export type PromptDescriptor = v.InferOutput<typeof PromptDescriptorSchema>;
export type SkillDescriptor = v.InferOutput<typeof SkillDescriptorSchema>;
export type PathDescriptor = v.InferOutput<typeof PathDescriptorSchema>;

export const PathCatalogSchema = v.array(PathDescriptorSchema);

export const ClientDescriptorSchema = v.objectWithRest(
  {
    id: ClientIdSchema,
    name: v.string(),
    description: v.optional(v.string()),
    version: v.optional(v.string()),
    platform: v.optional(v.string()),
    metadata: v.optional(ShallowObject),
    paths: PathCatalogSchema,
  },
  ShallowValue,
);
export type ClientDescriptor = v.InferOutput<typeof ClientDescriptorSchema>;

// ---------------------------------------------------------------------------------------------
// MDP messages (SPEC §3)

export const RegisterClientMessageSchema = v.object({
  type: v.literal('registerClient'),
  client: ClientDescriptorSchema,
  auth: v.optional(AuthContextSchema),
});
export const UpdateClientCatalogMessageSchema = v.object({
  type: v.literal('updateClientCatalog'),
  clientId: NonEmptyString,
  paths: PathCatalogSchema,
});
export const UnregisterClientMessageSchema = v.object({
  type: v.literal('unregisterClient'),
  clientId: NonEmptyString,
});
export const CallClientResultMessageSchema = v.object({
  type: v.literal('callClientResult'),
  requestId: NonEmptyString,
  ok: v.boolean(),
  data: v.optional(v.unknown()),
  error: v.optional(SerializedErrorSchema),
});
// Heartbeats are lenient about the timestamp: a missing one is not worth dropping a connection.
export const PingMessageSchema = v.object({ type: v.literal('ping'), timestamp: v.optional(v.number()) });
export const PongMessageSchema = v.object({ type: v.literal('pong'), timestamp: v.optional(v.number()) });

export const CallClientArgsSchema = v.object({
  params: v.optional(StringRecordSchema),
  query: v.optional(StringRecordSchema),
  body: v.optional(v.unknown()),
  headers: v.optional(StringRecordSchema),
});
export const CALL_KINDS = ['tool', 'prompt', 'skill'] as const;
export const CallClientMessageSchema = v.object({
  type: v.literal('callClient'),
  requestId: NonEmptyString,
  clientId: NonEmptyString,
  method: v.picklist(ENDPOINT_METHODS),
  path: v.string(),
  params: v.optional(StringRecordSchema),
  query: v.optional(StringRecordSchema),
  body: v.optional(v.unknown()),
  headers: v.optional(StringRecordSchema),
  auth: v.optional(AuthContextSchema),
  // The named form. This server always sends it; optional so client projects can parse calls
  // from servers that send only the path form.
  kind: v.optional(v.picklist(CALL_KINDS)),
  name: v.optional(v.string()),
  args: v.optional(CallClientArgsSchema),
});

export const ClientToServerMessageSchema = v.variant(
  'type',
  [
    RegisterClientMessageSchema,
    UpdateClientCatalogMessageSchema,
    UnregisterClientMessageSchema,
    CallClientResultMessageSchema,
    PingMessageSchema,
    PongMessageSchema,
  ],
  'unknown message type',
);
export const ServerToClientMessageSchema = v.variant('type', [CallClientMessageSchema, PingMessageSchema, PongMessageSchema], 'unknown message type');

export type RegisterClientMessage = v.InferOutput<typeof RegisterClientMessageSchema>;
export type UpdateClientCatalogMessage = v.InferOutput<typeof UpdateClientCatalogMessageSchema>;
export type UnregisterClientMessage = v.InferOutput<typeof UnregisterClientMessageSchema>;
export type CallClientResultMessage = v.InferOutput<typeof CallClientResultMessageSchema>;
export type PingMessage = v.InferOutput<typeof PingMessageSchema>;
export type PongMessage = v.InferOutput<typeof PongMessageSchema>;
export type CallClientMessage = v.InferOutput<typeof CallClientMessageSchema>;
export type CallKind = (typeof CALL_KINDS)[number];
export type ClientToServerMessage = v.InferOutput<typeof ClientToServerMessageSchema>;
export type ServerToClientMessage = v.InferOutput<typeof ServerToClientMessageSchema>;
export type MdpMessage = ClientToServerMessage | ServerToClientMessage;

/** Message types only the server may send. */
export const SERVER_TO_CLIENT_ONLY_TYPES: ReadonlySet<string> = new Set(['callClient']);

// ---------------------------------------------------------------------------------------------
// Metadata document (GET /mdp/meta, SPEC §9)

const NonNegativeInteger = v.pipe(v.number(), v.integer(), v.minValue(0));

export const MEMBERSHIP_MODES = ['dynamic', 'static'] as const;
export type MembershipMode = (typeof MEMBERSHIP_MODES)[number];
export const CLUSTER_ROLES = ['leader', 'follower', 'candidate'] as const;
export type ClusterRole = (typeof CLUSTER_ROLES)[number];

export const MetaDocumentSchema = v.object({
  protocol: v.literal('mdp'),
  protocolVersion: v.string(),
  supportedProtocolRanges: v.array(v.string()),
  serverId: NonEmptyString,
  endpoints: v.object({
    ws: v.string(),
    httpLoop: v.string(),
    auth: v.string(),
    meta: v.string(),
    cluster: v.string(),
  }),
  features: v.object({
    upstreamProxy: v.boolean(),
    clusterControl: v.boolean(),
  }),
  cluster: v.object({
    id: v.string(),
    membershipMode: v.picklist(MEMBERSHIP_MODES),
    membershipFingerprint: v.string(),
    role: v.picklist(CLUSTER_ROLES),
    term: NonNegativeInteger,
    leaderId: v.string(),
    leaderUrl: v.string(),
    leaseDurationMs: NonNegativeInteger,
    knownMemberCount: NonNegativeInteger,
    reachableMemberCount: NonNegativeInteger,
    quorumSize: NonNegativeInteger,
    hasQuorum: v.boolean(),
  }),
});
export type MetaDocument = v.InferOutput<typeof MetaDocumentSchema>;

// ---------------------------------------------------------------------------------------------
// Cluster control messages (SPEC §10)

const clusterBase = {
  clusterId: v.string(),
  serverId: NonEmptyString,
  term: NonNegativeInteger,
  timestamp: v.number(),
};

export const ClusterHelloSchema = v.object({
  type: v.literal('clusterHello'),
  ...clusterBase,
  membershipMode: v.picklist(MEMBERSHIP_MODES),
  membershipFingerprint: v.string(),
  role: v.picklist(CLUSTER_ROLES),
  wsUrl: v.string(),
  clusterUrl: v.string(),
  leaderId: v.optional(v.string()),
  leaderUrl: v.optional(v.string()),
  /** *beyond*: proof of the shared cluster secret, when one is configured. */
  auth: v.optional(v.string()),
});
export const ClusterHeartbeatSchema = v.object({
  type: v.literal('clusterHeartbeat'),
  ...clusterBase,
  leaderId: v.string(),
  leaderUrl: v.string(),
  leaseDurationMs: NonNegativeInteger,
});
export const ClusterHeartbeatAckSchema = v.object({
  type: v.literal('clusterHeartbeatAck'),
  ...clusterBase,
  followerId: v.string(),
  leaderId: v.string(),
});
export const ClusterVoteRequestSchema = v.object({
  type: v.literal('clusterVoteRequest'),
  ...clusterBase,
  candidateId: v.string(),
  candidateUrl: v.string(),
  preVote: v.optional(v.boolean()),
});
export const ClusterVoteResponseSchema = v.object({
  type: v.literal('clusterVoteResponse'),
  ...clusterBase,
  voterId: v.string(),
  voteGranted: v.boolean(),
  leaderId: v.optional(v.string()),
  leaderUrl: v.optional(v.string()),
  preVote: v.optional(v.boolean()),
});
export const ClusterLeaderResignSchema = v.object({
  type: v.literal('clusterLeaderResign'),
  ...clusterBase,
  leaderId: v.string(),
  /**
   * *beyond*: the sender is shutting down and leaves the cluster (any member sends it on close, a
   * follower naming itself as `leaderId`), so that members of a dynamic cluster stop counting it.
   */
  leaving: v.optional(v.boolean()),
});
export const ClusterRpcRequestSchema = v.object({
  type: v.literal('clusterRpcRequest'),
  ...clusterBase,
  requestId: NonEmptyString,
  method: v.string(),
  params: v.optional(v.unknown()),
});
export const ClusterRpcResponseSchema = v.object({
  type: v.literal('clusterRpcResponse'),
  ...clusterBase,
  requestId: NonEmptyString,
  ok: v.boolean(),
  result: v.optional(v.unknown()),
  error: v.optional(SerializedErrorSchema),
});

export const ClusterMessageSchema = v.variant(
  'type',
  [
    ClusterHelloSchema,
    ClusterHeartbeatSchema,
    ClusterHeartbeatAckSchema,
    ClusterVoteRequestSchema,
    ClusterVoteResponseSchema,
    ClusterLeaderResignSchema,
    ClusterRpcRequestSchema,
    ClusterRpcResponseSchema,
  ],
  'unknown cluster message type',
);
export type ClusterHello = v.InferOutput<typeof ClusterHelloSchema>;
export type ClusterHeartbeat = v.InferOutput<typeof ClusterHeartbeatSchema>;
export type ClusterHeartbeatAck = v.InferOutput<typeof ClusterHeartbeatAckSchema>;
export type ClusterVoteRequest = v.InferOutput<typeof ClusterVoteRequestSchema>;
export type ClusterVoteResponse = v.InferOutput<typeof ClusterVoteResponseSchema>;
export type ClusterLeaderResign = v.InferOutput<typeof ClusterLeaderResignSchema>;
export type ClusterRpcRequest = v.InferOutput<typeof ClusterRpcRequestSchema>;
export type ClusterRpcResponse = v.InferOutput<typeof ClusterRpcResponseSchema>;
export type ClusterMessage = v.InferOutput<typeof ClusterMessageSchema>;
