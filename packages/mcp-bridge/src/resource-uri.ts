/**
 * Skills as MCP resources: `mdp://<clientId><path>`, the client id percent-encoded (ids may hold
 * `:` or `/`), e.g. `mdp://todo/docs/review/skill.md`. A skill with `:param` segments is a
 * resource template, `mdp://todo/docs/{topic}/skill.md` (RFC 6570, level 1).
 */
import type { Picked } from './path-args.js';

export const RESOURCE_SCHEME = 'mdp:';

/**
 * The server's own guide (`GET /SKILL.md` of an MDP server), when the host gives one. Its authority
 * is empty: a client id never is, so no client's skill can have this URI (`mdp://server/SKILL.md`
 * would be the skill `/SKILL.md` of a client named `server`).
 */
export const SERVER_GUIDE_URI = `${RESOURCE_SCHEME}///SKILL.md`;

export function resourceUri(clientId: string, path: string): string {
  return `${RESOURCE_SCHEME}//${encodeURIComponent(clientId)}${path}`;
}

export function resourceUriTemplate(clientId: string, pattern: string): string {
  return resourceUri(clientId, pattern.replace(/\/:([^/]+)/g, '/{$1}'));
}

function decode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The client and concrete path an `mdp://` URI names, or why it names none. */
export function parseResourceUri(uri: string): Picked<{ clientId: string; path: string }> {
  const bad = (why: string): Picked<never> => ({ ok: false, message: `Resource URI ${JSON.stringify(uri)} ${why}` });
  const prefix = `${RESOURCE_SCHEME}//`;
  if (!uri.startsWith(prefix)) return bad(`is not an MDP resource (they start with ${prefix})`);
  if (/[?#]/.test(uri)) return bad('must not have a query or fragment');
  const rest = uri.slice(prefix.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return bad(`must be ${prefix}<clientId>/<path>`);
  const clientId = decode(rest.slice(0, slash));
  if (!clientId) return bad('has a malformed client id');
  const segments = rest
    .slice(slash + 1)
    .split('/')
    .map(decode);
  if (segments.some((segment) => segment === undefined || segment.includes('/'))) return bad('has a malformed path segment');
  return { ok: true, value: { clientId, path: `/${segments.join('/')}` } };
}
