/**
 * The catalog as a pure transition: `step(state, event, now) → { state, notify, wakeAt }`. The
 * driver (bridge.ts) feeds it the clients the host lists and a tick at `wakeAt`; `notify` names
 * the kinds whose `list_changed` notification is due. No timers in here (STYLE §6).
 *
 *   host lists clients ──▶ catalog ──▶ surface (surface.ts) ──▶ changed since last notified?
 *                            │                                        │ yes: notify at now + debounce
 *   a client gone from the   │ held (still listed) for returnGraceMs  ▼
 *   listing ─────────────────┘ then dropped, unless it came back   tick at notifyAt ──▶ notify the
 *                                                                  kinds that still differ
 *
 * - Debounce: the first change opens a window of `debounceMs`; every change within it is in the
 *   same notification, and a kind whose list is back to what agents were last told is not sent.
 * - No flapping: a client that leaves is kept in the lists for `returnGraceMs`, so a page reload or
 *   a mirror moving to a new hub never reaches agents. One gone for longer is dropped (agents hear
 *   of it within returnGraceMs + debounceMs); back within `rememberMs` it takes its old place in
 *   the order, so the cap keeps the same tools listed. Names are kept for the life of the process.
 */
import { emptyNameBook, type NameBook } from './names.js';
import { buildSurface, emptySurface, type CatalogClient, type Surface, type SurfaceOptions } from './surface.js';

export const CATALOG_KINDS = ['tools', 'prompts', 'resources'] as const;
export type CatalogKind = (typeof CATALOG_KINDS)[number];

export interface CatalogOptions extends SurfaceOptions {
  /** Window that gathers changes into one notification per kind, ms. */
  readonly debounceMs: number;
  /** A client gone from the host's listing stays listed this long, ms. */
  readonly returnGraceMs: number;
  /** A dropped client's place in the order is remembered this long, ms. */
  readonly rememberMs: number;
}

export const CATALOG_DEFAULTS: CatalogOptions = {
  surface: 'catalog',
  maxTools: 40,
  include: [],
  exclude: [],
  descriptionMaxChars: 1000,
  debounceMs: 300,
  returnGraceMs: 500,
  rememberMs: 10_000,
};

type Fingerprints = Readonly<Record<CatalogKind, string>>;

export interface CatalogState {
  readonly options: CatalogOptions;
  /** Clients of the last listing, by id. */
  readonly present: ReadonlyMap<string, CatalogClient>;
  /** Clients gone from the listing but still listed, until `until`. */
  readonly held: ReadonlyMap<string, { readonly client: CatalogClient; readonly until: number }>;
  /** Order of first sight; `forgetAt` is Infinity while the client is listed. */
  readonly seen: ReadonlyMap<string, { readonly seq: number; readonly forgetAt: number }>;
  readonly nextSeq: number;
  readonly book: NameBook;
  readonly surface: Surface;
  readonly fingerprints: Fingerprints;
  /** What agents were last told (by a notification or, at first, the empty lists). */
  readonly announced: Fingerprints;
  /** When the pending notification is due; Infinity when none is. */
  readonly notifyAt: number;
}

export type CatalogEvent = { readonly type: 'catalog'; readonly clients: readonly CatalogClient[] } | { readonly type: 'tick' };

export interface CatalogStep {
  readonly state: CatalogState;
  /** Kinds whose `list_changed` is due now. */
  readonly notify: CatalogKind[];
  /** When to tick next; Infinity when nothing is waiting. */
  readonly wakeAt: number;
}

function fingerprintsOf(surface: Surface): Fingerprints {
  return {
    tools: JSON.stringify(surface.tools.map((tool) => tool.definition)),
    prompts: JSON.stringify(surface.prompts.map((prompt) => prompt.definition)),
    resources: JSON.stringify([surface.resources.map((r) => r.definition), surface.templates.map((t) => t.definition)]),
  };
}

/** `options` over the defaults; keys set to undefined keep the default. */
function withDefaults(options: Partial<CatalogOptions>): CatalogOptions {
  const given = Object.fromEntries(Object.entries(options).filter(([key, value]) => value !== undefined && key in CATALOG_DEFAULTS));
  return { ...CATALOG_DEFAULTS, ...given };
}

export function initialCatalog(options: Partial<CatalogOptions> = {}): CatalogState {
  const fingerprints = fingerprintsOf(emptySurface);
  return {
    options: withDefaults(options),
    present: new Map(),
    held: new Map(),
    seen: new Map(),
    nextSeq: 0,
    book: emptyNameBook,
    surface: emptySurface,
    fingerprints,
    announced: fingerprints,
    notifyAt: Infinity,
  };
}

const changedKinds = (a: Fingerprints, b: Fingerprints): CatalogKind[] => CATALOG_KINDS.filter((kind) => a[kind] !== b[kind]);

export function step(state: CatalogState, event: CatalogEvent, now: number): CatalogStep {
  const { options } = state;
  let { present, nextSeq } = state;
  const held = new Map(state.held);
  const seen = new Map(state.seen);
  let rebuild = false;

  for (const [id, entry] of held) {
    if (entry.until > now) continue;
    held.delete(id);
    seen.set(id, { seq: seen.get(id)?.seq ?? nextSeq++, forgetAt: now + options.rememberMs });
    rebuild = true;
  }
  for (const [id, entry] of seen) if (entry.forgetAt <= now) seen.delete(id);

  if (event.type === 'catalog') {
    const next = new Map(event.clients.map((client) => [client.id, client] as const));
    for (const [id, client] of present) if (!next.has(id)) held.set(id, { client, until: now + options.returnGraceMs });
    for (const id of next.keys()) {
      held.delete(id);
      seen.set(id, { seq: seen.get(id)?.seq ?? nextSeq++, forgetAt: Infinity });
    }
    present = next;
    rebuild = true;
  }

  let { surface, book, fingerprints, announced, notifyAt } = state;
  if (rebuild) {
    const order = (id: string): number => seen.get(id)?.seq ?? Infinity;
    const clients = [...present.values(), ...[...held.values()].map((entry) => entry.client)].sort((a, b) => order(a.id) - order(b.id));
    ({ surface, book } = buildSurface(clients, book, options));
    fingerprints = fingerprintsOf(surface);
  }

  let notify: CatalogKind[] = [];
  if (changedKinds(fingerprints, announced).length === 0) notifyAt = Infinity;
  else if (notifyAt === Infinity) notifyAt = now + options.debounceMs;
  if (now >= notifyAt) {
    notify = changedKinds(fingerprints, announced);
    announced = fingerprints;
    notifyAt = Infinity;
  }

  let wakeAt = notifyAt;
  for (const entry of held.values()) wakeAt = Math.min(wakeAt, entry.until);
  return { state: { options, present, held, seen, nextSeq, book, surface, fingerprints, announced, notifyAt }, notify, wakeAt };
}
