/**
 * Resource subscriptions (`resources/subscribe`, `resources/unsubscribe`) on skills: a session's
 * set of `mdp://` URIs, bounded, and which of them a listing's client changes touch. A skill's
 * text is its client's to give on each read, so "updated" means: its client changed its catalog,
 * registered again, left, or came back. A subscription outlives its client leaving (a page reload
 * comes back), until the agent unsubscribes or the session ends. The server's guide
 * (`mdp:///SKILL.md`) describes every client, so any change updates it.
 */
import { compilePattern, isSkillPath, matchPattern, splitPath } from '@mdp/protocol';
import type { ClientChanges } from './client-changes.js';
import { SERVER_GUIDE_URI, parseResourceUri } from './resource-uri.js';
import type { CatalogClient } from './surface.js';

/** Most subscriptions one session holds. */
export const SUBSCRIPTIONS_MAX = 100;

export type Refusal = { readonly kind: 'invalid' | 'not_found' | 'full'; readonly message: string };

/** The client a subscribable URI names ('' for the guide), or why it cannot be subscribed to. */
export function subscribable(
  uri: string,
  clients: readonly CatalogClient[],
  hasGuide: boolean,
): { readonly ok: true; readonly value: string } | ({ readonly ok: false } & Refusal) {
  if (uri === SERVER_GUIDE_URI) {
    return hasGuide ? { ok: true, value: '' } : { ok: false, kind: 'not_found', message: `Resource ${uri} not found: this server has no guide` };
  }
  const target = parseResourceUri(uri);
  if (!target.ok) return { ok: false, kind: 'invalid', message: target.message };
  const { clientId, path } = target.value;
  if (!isSkillPath(path))
    return { ok: false, kind: 'invalid', message: `Resource URI ${JSON.stringify(uri)} names no skill: its path must end in skill.md, SKILL.md or .skill.md` };
  const client = clients.find((entry) => entry.id === clientId);
  if (!client) return { ok: false, kind: 'not_found', message: `Resource ${uri} not found: no client ${JSON.stringify(clientId)} is connected` };
  const segments = splitPath(path);
  const has = client.paths.some((entry) => entry.type === 'skill' && matchPattern(compilePattern(entry.path), segments) !== undefined);
  if (!has) return { ok: false, kind: 'not_found', message: `Resource ${uri} not found: client ${JSON.stringify(clientId)} has no skill ${path}` };
  return { ok: true, value: clientId };
}

/** One session's subscriptions: URI → the client it belongs to ('' for the guide). */
export class Subscriptions {
  private readonly byUri = new Map<string, string>();

  constructor(private readonly max = SUBSCRIPTIONS_MAX) {}

  get size(): number {
    return this.byUri.size;
  }

  /** Subscribe `uri` (of `clientId`); refused past the cap, unless already held. */
  add(uri: string, clientId: string): Refusal | undefined {
    if (!this.byUri.has(uri) && this.byUri.size >= this.max) {
      return { kind: 'full', message: `Too many subscriptions: a session holds at most ${this.max}; unsubscribe from one first` };
    }
    this.byUri.set(uri, clientId);
    return undefined;
  }

  delete(uri: string): void {
    this.byUri.delete(uri);
  }

  /** The subscribed URIs that `changes` touch. */
  touched(changes: ClientChanges): string[] {
    if (this.byUri.size === 0) return [];
    const ids = new Set([...changes.came, ...changes.left, ...changes.changed].map((client) => client.id));
    if (ids.size === 0) return [];
    return [...this.byUri].filter(([, clientId]) => clientId === '' || ids.has(clientId)).map(([uri]) => uri);
  }
}
