/**
 * Tenancy by principal (issue 36, SPEC §12): which clients a caller sees. Under an auth policy every
 * client belongs to the principal of the credential that registered it (ownership.ts, `principal`
 * of a client), and every caller is the principal of its own credential (`AuthGate.principalOf`).
 *
 *   mode       caller (viewer)               sees
 *   shared     anyone                        every client (the default: one token per app)
 *   principal  none (the server itself)      every client
 *   principal  principal P                   the clients of P, and the shared clients
 *   principal  no principal                  the shared clients only
 *
 * A client is shared when its id (or, for a mirror of a cluster member's client, the id it has on
 * its member) matches one of the shared ids or globs (`*` any characters, `?` one), or when
 * `isShared` says so: the seam for a shared scope once credentials carry scopes (the teams issue).
 *
 * "Sees" is everything: a client a caller does not see is, for that caller, a client that is not
 * there. The edges answer it exactly as an unknown id (skill routes: the seed's empty 404 with
 * `MDP-Error-Code: unknown_client`; host API: `not_found`; MCP: no tool, no resource), and listings,
 * their cursors and change events leave it out.
 */

export const TENANCY_MODES = ['shared', 'principal'] as const;
export type TenancyMode = (typeof TENANCY_MODES)[number];

/** Who asks. `principal` is the caller's (`AuthGate.principalOf`); `undefined` when it has none. */
export interface Viewer {
  readonly principal: string | undefined;
}

/** What the rule needs of a client. */
export interface TenantClient {
  readonly id: string;
  /** Who it belongs to (the `principal` of `ClientInfo`). */
  readonly principal: string | undefined;
  /** For a trusted mirror of a cluster member's client, the id it has on that member. */
  readonly bareId?: string | undefined;
}

export interface TenancyOptions {
  /** Default `shared`. */
  readonly mode?: TenancyMode;
  /** Ids or globs of the clients every principal sees (`*`: any characters, `?`: one). */
  readonly sharedClients?: readonly string[];
  /** A client shared by what it is rather than by its id (seam for a shared scope). */
  readonly isShared?: (client: TenantClient) => boolean;
}

/** Whether a caller sees a client. */
export type Visibility = (client: TenantClient) => boolean;

export interface Tenancy {
  readonly mode: TenancyMode;
  /**
   * What `viewer` sees, or `undefined` when it sees every client (shared mode, or no viewer: the
   * server itself), so that callers skip the test altogether.
   */
  seenBy(viewer: Viewer | undefined): Visibility | undefined;
}

/** Longest shared id or glob, characters (a client id is at most what a message carries, but a flag need not be). */
export const MAX_SHARED_PATTERN_CHARS = 1024;

/** Why `pattern` cannot be a shared client id or glob, or `undefined` when it can. */
export function sharedPatternProblem(pattern: string): string | undefined {
  if (pattern === '') return 'a shared client id or glob must not be empty';
  if (pattern.length > MAX_SHARED_PATTERN_CHARS) return `a shared client id or glob is at most ${MAX_SHARED_PATTERN_CHARS} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return `shared client ${JSON.stringify(pattern)}: control characters are not allowed`;
  return undefined;
}

/** One regular expression for every pattern: a whole-string match of any. */
function sharedMatcher(patterns: readonly string[]): ((id: string) => boolean) | undefined {
  if (patterns.length === 0) return undefined;
  const bodies = patterns.map((glob) =>
    glob
      .replace(/[.+^${}()|[\]\\/]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.'),
  );
  const pattern = new RegExp(`^(?:${bodies.join('|')})$`, 's');
  return (id) => pattern.test(id);
}

/** Everything for everyone: the default. */
export const SHARED_TENANCY: Tenancy = Object.freeze({ mode: 'shared' as const, seenBy: () => undefined });

/** The rule for `options`; throws RangeError for a mode or a shared pattern it cannot use. */
export function createTenancy(options: TenancyOptions = {}): Tenancy {
  const mode = options.mode ?? 'shared';
  if (!(TENANCY_MODES as readonly string[]).includes(mode)) throw new RangeError(`tenancy must be ${TENANCY_MODES.join(' or ')}, got ${JSON.stringify(mode)}`);
  const patterns = options.sharedClients ?? [];
  for (const pattern of patterns) {
    const problem = sharedPatternProblem(pattern);
    if (problem) throw new RangeError(problem);
  }
  if (mode === 'shared') return SHARED_TENANCY;
  const named = sharedMatcher(patterns);
  const byWhat = options.isShared;
  const shared = (client: TenantClient): boolean =>
    (named !== undefined && (named(client.id) || (client.bareId !== undefined && client.bareId !== client.id && named(client.bareId)))) ||
    byWhat?.(client) === true;
  return {
    mode,
    seenBy(viewer) {
      if (viewer === undefined) return undefined;
      const { principal } = viewer;
      // A client with no principal (an embedder's own session) is no caller's own.
      return (client) => (principal !== undefined && client.principal === principal) || shared(client);
    },
  };
}
