/**
 * Results an agent can see (SPEC §13, issue 33): a client's answer that is MCP content, or media
 * its endpoint declares, becomes MCP content blocks instead of JSON text. Pure: no SDK, no I/O.
 *
 * - MCP content: an object, or a non-empty array of objects, whose `type` is one of MCP's five
 *   content types. Every block is checked strictly (valibot, unknown fields refused, base64 data,
 *   an `image/…` or `audio/…` mime type); one malformed block and the whole answer is shown as
 *   JSON, as any other answer: nothing a client sends reaches an agent's host unchecked.
 * - Declared media: an endpoint whose `contentType` is `image/…` or `audio/…` and whose answer is
 *   a base64 string (its mime type the declared one) or a `data:` URL with base64 (its own, of the
 *   same kind) is one image or audio block.
 * - Size: the bytes of the blocks' texts and decoded data together, at most `maxBytes`; past it the
 *   outcome is `too_large` (the caller's clear error), never a block cut short.
 * - Whose: an embedded `resource` with an `mdp:` URI must be one of the answering client's own
 *   skills (`mdp://<its id>/…`). Another client's skill, or the server's guide, would put words in
 *   their mouth: such an answer is shown as JSON. Links (`resource_link`) are only links: an agent
 *   that follows one reads through its own view.
 */
import * as v from 'valibot';
import { RESOURCE_SCHEME, parseResourceUri } from './resource-uri.js';

/** MCP's content block types (2025-11-25). */
export const CONTENT_TYPES = ['text', 'image', 'audio', 'resource', 'resource_link'] as const;

/** Blocks one answer may hold (past it, the answer is shown as JSON). */
export const MAX_CONTENT_BLOCKS = 100;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MEDIA_TYPE = /^([a-z0-9][a-z0-9!#$&^_.+-]*)\/([a-z0-9][a-z0-9!#$&^_.+-]*)$/;
const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,([\s\S]*)$/i;

const Base64Schema = v.pipe(v.string(), v.regex(BASE64, 'must be base64'));
const mediaTypeOf = (kind: string) =>
  v.pipe(
    v.string(),
    v.check((type) => MEDIA_TYPE.exec(type.toLowerCase())?.[1] === kind, `must be an ${kind}/… media type`),
  );
const UriSchema = v.pipe(
  v.string(),
  v.check((uri) => URL.canParse(uri), 'must be a URI'),
);
const MetaSchema = v.record(v.string(), v.unknown());
const AnnotationsSchema = v.strictObject({
  audience: v.optional(v.array(v.picklist(['user', 'assistant']))),
  priority: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  lastModified: v.optional(v.pipe(v.string(), v.isoTimestamp())),
});
const common = { annotations: v.optional(AnnotationsSchema), _meta: v.optional(MetaSchema) };
const IconSchema = v.strictObject({
  src: UriSchema,
  mimeType: v.optional(v.string()),
  sizes: v.optional(v.array(v.string())),
  theme: v.optional(v.picklist(['light', 'dark'])),
});

const TextBlockSchema = v.strictObject({ type: v.literal('text'), text: v.string(), ...common });
const ImageBlockSchema = v.strictObject({ type: v.literal('image'), data: Base64Schema, mimeType: mediaTypeOf('image'), ...common });
const AudioBlockSchema = v.strictObject({ type: v.literal('audio'), data: Base64Schema, mimeType: mediaTypeOf('audio'), ...common });
const ResourceContentsSchema = v.union([
  v.strictObject({ uri: UriSchema, mimeType: v.optional(v.string()), text: v.string(), _meta: v.optional(MetaSchema) }),
  v.strictObject({ uri: UriSchema, mimeType: v.optional(v.string()), blob: Base64Schema, _meta: v.optional(MetaSchema) }),
]);
const ResourceBlockSchema = v.strictObject({ type: v.literal('resource'), resource: ResourceContentsSchema, ...common });
const ResourceLinkBlockSchema = v.strictObject({
  type: v.literal('resource_link'),
  uri: UriSchema,
  name: v.string(),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  mimeType: v.optional(v.string()),
  size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  icons: v.optional(v.array(IconSchema)),
  ...common,
});

export const ContentBlockSchema = v.variant('type', [TextBlockSchema, ImageBlockSchema, AudioBlockSchema, ResourceBlockSchema, ResourceLinkBlockSchema]);
export type ContentBlock = v.InferOutput<typeof ContentBlockSchema>;

export type ContentOutcome =
  /** Not content: show the answer as JSON. `problem` says why an answer that looked like content is not. */
  | { readonly kind: 'json'; readonly problem?: string }
  | { readonly kind: 'blocks'; readonly blocks: ContentBlock[] }
  | { readonly kind: 'too_large'; readonly bytes: number; readonly maxBytes: number };

export interface ContentOptions {
  /** The endpoint's declared `contentType`, if any. */
  readonly contentType?: string | undefined;
  /** Most bytes of text and decoded data the blocks may hold together. */
  readonly maxBytes: number;
  /** The client that answered: an embedded `mdp:` resource must be one of its skills. */
  readonly clientId?: string | undefined;
}

/** The index of the first embedded resource that claims an `mdp:` URI not of `clientId`'s, or -1. */
function foreignResource(blocks: readonly ContentBlock[], clientId: string): number {
  return blocks.findIndex((block) => {
    if (block.type !== 'resource' || !block.resource.uri.toLowerCase().startsWith(RESOURCE_SCHEME)) return false;
    const named = parseResourceUri(block.resource.uri);
    return !named.ok || named.value.clientId !== clientId;
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const looksLikeBlock = (value: unknown): boolean => isObject(value) && (CONTENT_TYPES as readonly unknown[]).includes(value.type);

/** Bytes that base64 text decodes to (it has been checked to be base64). */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return (data.length / 4) * 3 - padding;
}

/** The text and decoded data bytes of `blocks`. */
export function contentBytes(blocks: readonly ContentBlock[]): number {
  let bytes = 0;
  for (const block of blocks) {
    if (block.type === 'text') bytes += Buffer.byteLength(block.text);
    else if (block.type === 'image' || block.type === 'audio') bytes += base64Bytes(block.data);
    else if (block.type === 'resource') bytes += 'text' in block.resource ? Buffer.byteLength(block.resource.text) : base64Bytes(block.resource.blob);
  }
  return bytes;
}

/** The essence of a media type, lowercased without parameters (`Image/PNG; q=1` → `image/png`), or undefined. */
export function mediaType(type: string | undefined): string | undefined {
  const essence = type?.split(';')[0]?.trim().toLowerCase();
  return essence !== undefined && MEDIA_TYPE.test(essence) ? essence : undefined;
}

/**
 * Base64 data and its media type from a string answer: a `data:` URL with `;base64` (its own type),
 * or bare base64 (`fallbackType`). Undefined when it is neither, or has no concrete type.
 */
export function decodeMediaString(data: string, fallbackType: string | undefined): { readonly data: string; readonly mimeType: string } | undefined {
  const url = DATA_URL.exec(data);
  if (url) {
    const type = mediaType(url[1]);
    const payload = url[3]!;
    return type && BASE64.test(payload) ? { data: payload, mimeType: type } : undefined;
  }
  const type = mediaType(fallbackType);
  return type && BASE64.test(data) ? { data, mimeType: type } : undefined;
}

function sized(blocks: ContentBlock[], maxBytes: number): ContentOutcome {
  const bytes = contentBytes(blocks);
  return bytes > maxBytes ? { kind: 'too_large', bytes, maxBytes } : { kind: 'blocks', blocks };
}

/** How a client's answer `data` reaches an agent: as content blocks, as JSON, or not at all (too large). */
export function contentOf(data: unknown, options: ContentOptions): ContentOutcome {
  if (looksLikeBlock(data) || (Array.isArray(data) && data.length > 0 && data.every(looksLikeBlock))) {
    const items = Array.isArray(data) ? data : [data];
    if (items.length > MAX_CONTENT_BLOCKS) return { kind: 'json', problem: `more than ${MAX_CONTENT_BLOCKS} content blocks` };
    const parsed = v.safeParse(v.array(ContentBlockSchema), items);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      const where = issue.path?.map((step) => String(step.key)).join('.') ?? '';
      return { kind: 'json', problem: `content block ${where || '0'}: ${issue.message}` };
    }
    const foreign = options.clientId === undefined ? -1 : foreignResource(parsed.output, options.clientId);
    if (foreign >= 0) return { kind: 'json', problem: `content block ${foreign}: an embedded resource of another client or of the server` };
    return sized(parsed.output, options.maxBytes);
  }
  // `image/png`, or `image/*` (then only a data: URL names the type).
  const declared = options.contentType?.split(';')[0]?.trim().toLowerCase();
  const kind = declared?.split('/')[0];
  if ((kind === 'image' || kind === 'audio') && typeof data === 'string') {
    const media = decodeMediaString(data, mediaType(declared));
    if (!media?.mimeType.startsWith(`${kind}/`))
      return { kind: 'json', problem: `the answer of a ${declared} endpoint is not base64 or a base64 data: URL of that kind` };
    return sized([{ type: kind, data: media.data, mimeType: media.mimeType }], options.maxBytes);
  }
  return { kind: 'json' };
}

/**
 * Whether a skill of media type `type` is binary (read as a `blob`): anything but text, JSON, XML,
 * JavaScript, YAML and Markdown-like types.
 */
export function isBinaryType(type: string | undefined): boolean {
  const essence = mediaType(type);
  if (essence === undefined) return false;
  const [top, sub] = essence.split('/') as [string, string];
  if (top === 'text') return false;
  if (sub.endsWith('+json') || sub.endsWith('+xml') || sub.endsWith('+yaml')) return false;
  return !['json', 'xml', 'javascript', 'ecmascript', 'yaml', 'x-yaml', 'toml', 'markdown', 'x-www-form-urlencoded', 'graphql', 'sql'].includes(sub);
}
