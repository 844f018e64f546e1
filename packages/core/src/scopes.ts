/**
 * Scopes per action (*beyond*, SPEC §17): what a credential the auth policy accepted may do.
 *
 *   action     what it covers                                    default scope
 *   read       skill reads, listings (host API, MCP lists)        mdp:read
 *   call       endpoint and prompt calls (host API, MCP tools)    mdp:call
 *   register   registering an MDP client (websocket, HTTP loop)   mdp:register
 *   admin      metrics, the inspector                             mdp:admin
 *
 * A credential that names no scopes (a static token, a policy without scopes) may do everything.
 * One that does is held to them. The register scope may carry a client id prefix after a colon:
 * `mdp:register:acme-` lets its holder register ids that start with `acme-` and no others.
 *
 * Pure: the gate (auth-policy.ts) and the edges call these with the scopes they read.
 */
import type { AuthContext } from '@mdp/protocol';

export type AuthAction = 'read' | 'call' | 'register' | 'admin';

export const AUTH_ACTIONS: readonly AuthAction[] = Object.freeze(['read', 'call', 'register', 'admin']);

/** Which scope grants each action. */
export type ScopeNames = Readonly<Record<AuthAction, string>>;

export const DEFAULT_SCOPE_NAMES: ScopeNames = Object.freeze({
  read: 'mdp:read',
  call: 'mdp:call',
  register: 'mdp:register',
  admin: 'mdp:admin',
});

/**
 * What a caller may do: `undefined` for everything (no scopes named), else the scopes it holds.
 * Shared, never changed.
 */
export type Scopes = readonly string[] | undefined;

/** A scope name as OAuth allows it (RFC 6749 §3.3: printable ASCII but space, `"` and `\`). */
export function isScopeToken(value: string): boolean {
  return /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(value);
}

/**
 * The scope `scopes` lacks for `action` (on `clientId`, for `register`), or `undefined` when they
 * grant it. The name returned is the one to put in `WWW-Authenticate: Bearer
 * error="insufficient_scope", scope="…"`.
 */
export function missingScope(scopes: Scopes, action: AuthAction, names: ScopeNames = DEFAULT_SCOPE_NAMES, clientId?: string): string | undefined {
  if (scopes === undefined) return undefined;
  const needed = names[action];
  for (let i = 0; i < scopes.length; i++) {
    const scope = scopes[i] as string;
    if (scope === needed) return undefined;
    // `mdp:register:<prefix>`: ids that start with the prefix.
    if (
      action === 'register' &&
      clientId !== undefined &&
      scope.length > needed.length + 1 &&
      scope.startsWith(needed) &&
      scope.charCodeAt(needed.length) === 58 /* : */
    ) {
      if (clientId.startsWith(scope.slice(needed.length + 1))) return undefined;
    }
  }
  return needed;
}

/**
 * Check a mapping of actions to scope names (from flags or a config file): every action named once,
 * each name a valid scope token. Returns the problem, or `undefined`.
 */
export function scopeNamesProblem(names: Partial<Record<string, string>>): string | undefined {
  for (const key of Object.keys(names)) {
    if (!(AUTH_ACTIONS as readonly string[]).includes(key)) return `unknown action ${JSON.stringify(key)}: use ${AUTH_ACTIONS.join(', ')}`;
  }
  const seen = new Map<string, string>();
  for (const action of AUTH_ACTIONS) {
    const name = names[action];
    if (name === undefined) continue;
    if (!isScopeToken(name)) return `scope for ${action} must be one OAuth scope token (no spaces or quotes), got ${JSON.stringify(name)}`;
    const other = seen.get(name);
    if (other !== undefined) return `scope ${JSON.stringify(name)} names both ${other} and ${action}`;
    seen.set(name, action);
  }
  return undefined;
}

/** `space-separated` scopes of a token's `scope` claim (RFC 8693 §4.2), or an `scp` array (some providers). */
export function scopesOfClaims(claims: { readonly scope?: unknown; readonly scp?: unknown }): readonly string[] {
  const out: string[] = [];
  if (typeof claims.scope === 'string') for (const part of claims.scope.split(' ')) if (part !== '') out.push(part);
  if (Array.isArray(claims.scp)) {
    for (const part of claims.scp) if (typeof part === 'string' && part !== '') out.push(part);
  } else if (typeof claims.scp === 'string') {
    for (const part of claims.scp.split(' ')) if (part !== '') out.push(part);
  }
  return Object.freeze([...new Set(out)]);
}

/** A quoted-string of RFC 9110 §5.6.4 (the values below never hold `"` or `\`, but a URL might). */
function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/**
 * `WWW-Authenticate` of a 401 (RFC 6750 §3): `Bearer`, with the URL of the protected resource
 * metadata (RFC 9728 §5.1) when the server publishes one, so that an agent host finds the
 * authorization server by itself (MCP authorization).
 */
export function bearerChallenge(resourceMetadata?: string, error?: 'invalid_token'): string {
  const params: string[] = [];
  if (error !== undefined) params.push(`error=${quoted(error)}`);
  if (resourceMetadata !== undefined) params.push(`resource_metadata=${quoted(resourceMetadata)}`);
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}

/** `WWW-Authenticate` of a 403 for a missing scope (RFC 6750 §3.1, MCP authorization). */
export function insufficientScopeChallenge(scope: string, resourceMetadata?: string): string {
  const params = [`error="insufficient_scope"`, `scope=${quoted(scope)}`];
  if (resourceMetadata !== undefined) params.push(`resource_metadata=${quoted(resourceMetadata)}`);
  return `Bearer ${params.join(', ')}`;
}

/**
 * What an edge (skill routes, host API, MCP, inspector) needs to hold callers to their scopes and to
 * say how to sign in. A server builds one from its `AuthGate` and its protected resource metadata.
 */
export interface ScopeGuard {
  /** The scope a caller `authorize` accepted lacks for `action` (on `clientId`), or `undefined`. */
  missingScope(auth: AuthContext | undefined, action: AuthAction, clientId?: string): string | undefined;
  /** `WWW-Authenticate` of a 401 ({@link bearerChallenge}). */
  unauthorized(): string;
  /** `WWW-Authenticate` of a 403 for `scope` ({@link insufficientScopeChallenge}). */
  forbidden(scope: string): string;
}
