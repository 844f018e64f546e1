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
import type { AuthContext } from '@mdp/protocol';
import { createTokenPolicy, credentialPrincipal, type AuthPolicy, type Scopes } from '@mdp/core';
import type { AccessTokens, Verified } from './access-tokens.js';

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
  /**
   * What one credential is, worked out once: a request asks several times (verify, principal,
   * scopes, describe, the forwarded caller). Kept per auth object (one per request, from the
   * gate's extraction), never compared by the token's text, which would leak it by timing.
   */
  interface Facts {
    readonly verified: Verified | undefined;
    readonly staticOk: boolean;
    principal?: string;
  }
  const memo = new WeakMap<object, Facts>();
  const factsOf = (auth: AuthContext): Facts => {
    let facts = memo.get(auth);
    if (facts === undefined) {
      const verified = typeof auth.token === 'string' ? tokens.verified(auth.token) : undefined;
      facts = { verified, staticOk: verified === undefined && (fixed?.verify(auth) ?? false) };
      memo.set(auth, facts);
    }
    return facts;
  };
  const accessToken = (auth: AuthContext | undefined): Verified | undefined => (auth ? factsOf(auth).verified : undefined);
  return {
    cookieSecret: fixed?.cookieSecret ?? randomBytes(32),
    verify: (auth) => {
      if (!auth) return false;
      const facts = factsOf(auth);
      return facts.verified !== undefined || facts.staticOk;
    },
    principal: (auth) => {
      const facts = factsOf(auth);
      return facts.verified?.principal ?? (facts.principal ??= credentialPrincipal(auth));
    },
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
