/**
 * The values of the directory's KV keys, as JSON with short field names (a fleet of 20,000
 * clients rewrites and replays them), parsed with valibot when read: a value that does not parse,
 * or whose id does not hash to the key it sits under, is ignored, never trusted.
 */
import * as v from 'valibot';
import type { Announcement, NodeBeat } from './directory.js';
import { idToken } from './subjects.js';

/** Format version of both records; a node ignores values of another version. */
const VERSION = 1;

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));
/** Longest page origin an announcement carries, bytes; a longer one is not announced. */
export const MAX_ORIGIN_BYTES = 2048;
const Id = v.pipe(v.string(), v.minLength(1), v.maxLength(4096));

const BeatSchema = v.object({
  v: v.literal(VERSION),
  n: Id,
  i: Text(64),
  ttl: v.pipe(v.number(), v.integer(), v.minValue(0)),
});

const AnnouncementSchema = v.object({
  v: v.literal(VERSION),
  id: Id,
  n: Id,
  i: Text(64),
  p: v.optional(Text(4096)),
  d: Text(128),
  t: v.pipe(v.number(), v.finite()),
  tr: Text(64),
  s: v.boolean(),
  a: Text(64),
  o: v.optional(Text(MAX_ORIGIN_BYTES)),
});

export function encodeBeat(beat: NodeBeat): string {
  return JSON.stringify({ v: VERSION, n: beat.node, i: beat.incarnation, ttl: beat.ttlMs });
}

/** The beat stored under `key` (`n.<token>`), or undefined when it is not a valid one for that key. */
export function decodeBeat(key: string, text: string): NodeBeat | undefined {
  const parsed = v.safeParse(BeatSchema, parseJson(text));
  if (!parsed.success || key !== `n.${idToken(parsed.output.n)}`) return undefined;
  return { node: parsed.output.n, incarnation: parsed.output.i, ttlMs: parsed.output.ttl };
}

export function encodeAnnouncement(a: Announcement): string {
  return JSON.stringify({
    v: VERSION,
    id: a.clientId,
    n: a.node,
    i: a.incarnation,
    p: a.principal,
    d: a.digest,
    t: a.registeredAt,
    tr: a.transport,
    s: a.secure,
    a: a.authSource,
    ...(a.origin !== undefined && Buffer.byteLength(a.origin) <= MAX_ORIGIN_BYTES ? { o: a.origin } : {}),
  });
}

/** Short strings that many entries share, kept once (memory per remote client). */
const shared = new Map<string, string>();
function share(text: string): string {
  if (text.length > 64) return text;
  const known = shared.get(text);
  if (known !== undefined) return known;
  if (shared.size < 4096) shared.set(text, text);
  return text;
}

/** The announcement stored under `key` (`c.<token>`), or undefined when it is not a valid one for that key. */
export function decodeAnnouncement(key: string, text: string): Announcement | undefined {
  const parsed = v.safeParse(AnnouncementSchema, parseJson(text));
  if (!parsed.success) return undefined;
  const o = parsed.output;
  if (key !== `c.${idToken(o.id)}`) return undefined;
  return {
    clientId: o.id,
    node: share(o.n),
    incarnation: share(o.i),
    principal: o.p === undefined ? undefined : share(o.p),
    digest: o.d,
    registeredAt: o.t,
    transport: share(o.tr),
    secure: o.s,
    authSource: share(o.a),
    ...(o.o === undefined ? {} : { origin: share(o.o) }),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
