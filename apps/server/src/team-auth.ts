/**
 * The server's auth policy when it signs teams in (SPEC §17): static tokens (`--auth-token`) and
 * access tokens of an issuer (`--auth-issuer`, access-tokens.ts) side by side, as one core
 * `AuthPolicy`. A token shaped like a JWT is looked up among the verified access tokens first;
 * anything else is compared with the static tokens.
 *
 *   credential        principal                      scopes
 *   static token      token:<hash of the token>      every scope, or --auth-token-scopes
 *   access token      oidc:<hash of iss + sub>       its `scope` (or `scp`) claim
 */
import { randomBytes } from 'node:crypto';
import { createTokenPolicy, credentialPrincipal, type AuthPolicy, type Scopes } from '@mdp/core';
import type { AccessTokens } from './access-tokens.js';

export interface TeamAuthOptions {
  readonly staticTokens: readonly string[];
  /** Scopes of the static tokens; `undefined`: every scope. */
  readonly staticScopes?: readonly string[] | undefined;
  readonly accessTokens: AccessTokens;
}

export function createTeamPolicy(options: TeamAuthOptions): AuthPolicy {
  const fixed = options.staticTokens.length > 0 ? createTokenPolicy(options.staticTokens) : undefined;
  const tokens = options.accessTokens;
  const staticScopes: Scopes = options.staticScopes ? Object.freeze([...options.staticScopes]) : undefined;
  const accessToken = (auth: { readonly token?: unknown } | undefined) => (typeof auth?.token === 'string' ? tokens.verified(auth.token) : undefined);
  return {
    cookieSecret: fixed?.cookieSecret ?? randomBytes(32),
    verify: (auth) => accessToken(auth) !== undefined || (fixed?.verify(auth) ?? false),
    principal: (auth) => accessToken(auth)?.principal ?? credentialPrincipal(auth),
    scopes: (auth) => {
      const verified = accessToken(auth);
      return verified ? verified.scopes : staticScopes;
    },
    prepare: (auth) => (typeof auth.token === 'string' ? tokens.prepare(auth.token) : undefined),
    describe: (auth) => {
      const verified = accessToken(auth);
      return verified ? { issuer: verified.issuer, subject: verified.subject } : undefined;
    },
  };
}
