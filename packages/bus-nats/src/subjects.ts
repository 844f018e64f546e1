/**
 * Subjects, KV buckets and keys of one fleet on NATS, and the encoding that turns any untrusted id
 * (client id, node id, HTTP loop session id) into one safe subject token (SPEC §16).
 *
 * An id becomes exactly one token, never a wildcard, and two ids share a token only when they are
 * the same string:
 *
 *   well-formed, UTF-8 ≤ 160 bytes   →  base32 of its UTF-8 bytes (a–z, 2–7; no padding)
 *   well-formed, longer              →  "0" + base32 of SHA-256 of its UTF-8 bytes
 *   lone surrogates (ill-formed)     →  "1" + base32 of SHA-256 of its UTF-16LE code units
 *
 * The base32 alphabet is lower case and has no `.`, `*`, `>`, space or `0`/`1`, so the three forms
 * never meet and ids that differ only by case get different tokens. Long ids are hashed so that a
 * subject stays far below the NATS server's control-line limit (4 KiB by default; a longer PUB
 * makes the server drop the connection). Ill-formed strings are hashed from their code units,
 * because UTF-8 would turn every lone surrogate into U+FFFD and merge `"\uD800"` with `"\uFFFD"`.
 * A token is never decoded: a request carries the id in its body and the receiver checks that the
 * id's token is the one its subject named.
 */
import { createHash } from 'node:crypto';

/** Longest id (UTF-8 bytes) kept readable in a token; longer ids are hashed. 160 bytes → 256 chars. */
export const MAX_PLAIN_ID_BYTES = 160;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

const ALPHABET_CODES = Buffer.from(ALPHABET, 'latin1');

/**
 * Lowercase RFC 4648 base32 without padding. Written into bytes and read back as one flat string:
 * a key made of it is kept for every remote client, and a string built by `+=` per character is a
 * chain of concatenations that stays in the heap as such (and costs more to make and to hash).
 */
export function base32(bytes: Uint8Array): string {
  const out = Buffer.allocUnsafe(Math.ceil((bytes.length * 8) / 5));
  let at = 0;
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out[at++] = ALPHABET_CODES[(value >>> (bits - 5)) & 31] as number;
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out[at++] = ALPHABET_CODES[(value << (5 - bits)) & 31] as number;
  return out.toString('latin1', 0, at);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The subject token of an id (see the table above). Throws for the empty string: no id is empty. */
export function idToken(id: string): string {
  if (id.length === 0) throw new TypeError('an id must not be empty');
  if (LONE_SURROGATE.test(id)) return '1' + base32(createHash('sha256').update(Buffer.from(id, 'utf16le')).digest());
  const bytes = Buffer.from(id, 'utf8');
  if (bytes.length <= MAX_PLAIN_ID_BYTES) return base32(bytes);
  return '0' + base32(createHash('sha256').update(bytes).digest());
}

/**
 * What a fleet prefix may be: 1–48 of `A–Z a–z 0–9 _ -`. It names subjects (`<prefix>.…`) and KV
 * buckets (`<prefix>-nodes`), whose names allow no more than that. Case matters to NATS; keep to
 * lower case if the JetStream store lives on a case-insensitive file system.
 */
export const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,48}$/;

/** Why `prefix` cannot be a fleet prefix, or `undefined` when it can. */
export function prefixProblem(prefix: string): string | undefined {
  return PREFIX_PATTERN.test(prefix) ? undefined : `bus prefix ${JSON.stringify(prefix)} must be 1–48 characters of A–Z a–z 0–9 _ -`;
}

/**
 * A fleet prefix from any text (a cluster id): the text itself when it is a valid prefix, else
 * `mdp-` and 16 base32 characters of its SHA-256, so that different ids give different prefixes.
 */
export function prefixFor(text: string): string {
  if (PREFIX_PATTERN.test(text)) return text;
  return 'mdp-' + base32(createHash('sha256').update(text, 'utf8').digest()).slice(0, 16);
}

/** Most id tokens a {@link FleetNames} remembers (see `token`). */
export const MAX_REMEMBERED_TOKENS = 4096;

/** What a node does on a subject addressed to it (the fourth token of `<prefix>.n.<node>.<op>`). */
export type NodeOp = 'call' | 'catalog' | 'relay' | 'cancel';

/** Every subject, bucket and key of one fleet, for one node. */
export class FleetNames {
  /** This node's token. */
  readonly node: string;
  /** KV bucket of node heartbeats (max_age = the directory TTL). */
  readonly nodesBucket: string;
  /** KV bucket of client announcements (max_age = the refresh horizon). */
  readonly clientsBucket: string;
  /** Every subject addressed to this node: one subscription. */
  readonly nodeWildcard: string;
  /** The prefix of this node's reply inboxes (the connection's `inboxPrefix`). */
  readonly inboxPrefix: string;

  constructor(
    readonly prefix: string,
    nodeId: string,
  ) {
    const problem = prefixProblem(prefix);
    if (problem) throw new TypeError(problem);
    this.node = idToken(nodeId);
    this.nodesBucket = `${prefix}-nodes`;
    this.clientsBucket = `${prefix}-clients`;
    this.nodeWildcard = `${prefix}.n.${this.node}.>`;
    this.inboxPrefix = `_INBOX_${prefix}.${this.node}`;
    this.nodeHead = `${prefix}.n.${this.node}.`;
  }

  /** `<prefix>.n.<this node>.`: what every subject addressed to this node starts with. */
  private readonly nodeHead: string;
  /** Tokens of ids met on the hot path (a call's node and client), so that a call does not encode them again. */
  private readonly tokens = new Map<string, string>();

  /**
   * `idToken(id)`, remembered for short ids (every call names its node and its client, and the
   * holder checks the client's token again). At most {@link MAX_REMEMBERED_TOKENS}, forgotten all
   * at once when full: ids come and go with clients, and a flood of new ones costs one clear.
   */
  token(id: string): string {
    let token = this.tokens.get(id);
    if (token !== undefined) return token;
    token = idToken(id);
    if (id.length <= MAX_PLAIN_ID_BYTES) {
      if (this.tokens.size >= MAX_REMEMBERED_TOKENS) this.tokens.clear();
      this.tokens.set(id, token);
    }
    return token;
  }

  /** A request to node `nodeId`: `<prefix>.n.<node>.<op>[.<client>]`. */
  toNode(nodeId: string, op: NodeOp, clientId?: string): string {
    const base = `${this.prefix}.n.${this.token(nodeId)}.${op}`;
    return clientId === undefined ? base : `${base}.${this.token(clientId)}`;
  }

  /** The subject on which the node that holds HTTP loop session `sessionId` answers for it. */
  session(sessionId: string): string {
    return `${this.prefix}.s.${idToken(sessionId)}`;
  }

  /** The KV key of a node's heartbeat in `nodesBucket`. */
  nodeKey(nodeId: string): string {
    return `n.${idToken(nodeId)}`;
  }

  /** The KV key of a client's announcement in `clientsBucket`. */
  clientKey(clientId: string): string {
    return `c.${idToken(clientId)}`;
  }

  /**
   * The op and client token of a subject under `nodeWildcard`, or `undefined` for any other shape
   * (a subject this node must ignore).
   */
  parseNodeSubject(subject: string): { op: NodeOp; client: string | undefined } | undefined {
    const head = this.nodeHead;
    if (!subject.startsWith(head)) return undefined;
    const dot = subject.indexOf('.', head.length);
    const op = dot < 0 ? subject.slice(head.length) : subject.slice(head.length, dot);
    if (op === 'call' || op === 'catalog') {
      // Exactly one more token, not empty.
      if (dot < 0 || dot === subject.length - 1 || subject.indexOf('.', dot + 1) >= 0) return undefined;
      return { op, client: subject.slice(dot + 1) };
    }
    if (op === 'relay' || op === 'cancel') return dot < 0 ? { op, client: undefined } : undefined;
    return undefined;
  }
}
