import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SCOPE_NAMES,
  bearerChallenge,
  createAuthGate,
  insufficientScopeChallenge,
  isScopeToken,
  missingScope,
  scopeNamesProblem,
  scopesOfClaims,
  MdpError,
  Router,
  type AuthPolicy,
} from '../src/index.js';
import { client, connect } from './helpers.js';

describe('missingScope', () => {
  it('grants everything to a credential that names no scopes', () => {
    for (const action of ['read', 'call', 'register', 'admin'] as const) expect(missingScope(undefined, action)).toBeUndefined();
  });

  it('names the scope an action needs when the credential lacks it, even with no scopes at all', () => {
    expect(missingScope([], 'read')).toBe('mdp:read');
    expect(missingScope(['mdp:read'], 'read')).toBeUndefined();
    expect(missingScope(['mdp:read'], 'call')).toBe('mdp:call');
    expect(missingScope(['mdp:read', 'mdp:call'], 'admin')).toBe('mdp:admin');
    // Only the exact name counts: a scope that starts like it is another scope.
    expect(missingScope(['mdp:readx', 'mdp:rea'], 'read')).toBe('mdp:read');
  });

  it('lets a register scope with a prefix register the ids that start with it, and only those', () => {
    const scopes = ['mdp:register:acme-'];
    expect(missingScope(scopes, 'register', DEFAULT_SCOPE_NAMES, 'acme-editor')).toBeUndefined();
    expect(missingScope(scopes, 'register', DEFAULT_SCOPE_NAMES, 'other')).toBe('mdp:register');
    expect(missingScope(scopes, 'register', DEFAULT_SCOPE_NAMES)).toBe('mdp:register');
    // A prefix scope grants registering only, and `mdp:registerx` is no prefix form.
    expect(missingScope(scopes, 'read')).toBe('mdp:read');
    expect(missingScope(['mdp:registerxacme'], 'register', DEFAULT_SCOPE_NAMES, 'xacme')).toBe('mdp:register');
  });

  it('reads the names it is given', () => {
    const names = { ...DEFAULT_SCOPE_NAMES, call: 'tools.invoke' };
    expect(missingScope(['tools.invoke'], 'call', names)).toBeUndefined();
    expect(missingScope(['mdp:call'], 'call', names)).toBe('tools.invoke');
  });
});

describe('scope names and claims', () => {
  it('takes OAuth scope tokens only', () => {
    expect(isScopeToken('mdp:read')).toBe(true);
    for (const bad of ['', 'a b', 'a"b', 'a\\b', 'é']) expect(isScopeToken(bad), bad).toBe(false);
  });

  it('refuses a mapping with unknown actions, bad names or one name for two actions', () => {
    expect(scopeNamesProblem({ read: 'r', call: 'c' })).toBeUndefined();
    expect(scopeNamesProblem({ write: 'w' })).toMatch(/unknown action "write"/);
    expect(scopeNamesProblem({ read: 'a b' })).toMatch(/one OAuth scope token/);
    expect(scopeNamesProblem({ read: 'x', call: 'x' })).toMatch(/names both read and call/);
  });

  it('reads `scope` (space-separated) and `scp` (array or string), once each, ignoring junk', () => {
    expect(scopesOfClaims({ scope: 'mdp:read  mdp:call' })).toEqual(['mdp:read', 'mdp:call']);
    expect(scopesOfClaims({ scp: ['mdp:read', 7, ''] })).toEqual(['mdp:read']);
    expect(scopesOfClaims({ scope: 'a', scp: 'a b' })).toEqual(['a', 'b']);
    expect(scopesOfClaims({ scope: 42 })).toEqual([]);
  });

  it('builds the challenges of RFC 6750 and RFC 9728', () => {
    expect(bearerChallenge()).toBe('Bearer');
    expect(bearerChallenge('https://mdp.test/.well-known/oauth-protected-resource')).toBe(
      'Bearer resource_metadata="https://mdp.test/.well-known/oauth-protected-resource"',
    );
    expect(insufficientScopeChallenge('mdp:call')).toBe('Bearer error="insufficient_scope", scope="mdp:call"');
    expect(insufficientScopeChallenge('mdp:call', 'https://x.test/m')).toBe(
      'Bearer error="insufficient_scope", scope="mdp:call", resource_metadata="https://x.test/m"',
    );
  });
});

describe('the auth gate with scopes', () => {
  // Tokens `scoped-<scope>,<scope>` carry those scopes; `all` carries none (every scope).
  const policy: AuthPolicy = {
    verify: (auth) => typeof auth?.token === 'string' && (auth.token === 'all' || auth.token.startsWith('scoped-')),
    principal: (auth) => `p:${auth.token ?? ''}`,
    scopes: (auth) => (auth.token?.startsWith('scoped-') ? auth.token.slice(7).split(',').filter(Boolean) : undefined),
    describe: (auth) => (auth.token === 'all' ? undefined : { issuer: 'https://idp.test', subject: 'alice' }),
  };

  it('holds a caller to the scopes its credential names, and none to a policy without scopes', () => {
    const gate = createAuthGate(policy);
    expect(gate.missingScope({ token: 'scoped-mdp:read' }, 'read')).toBeUndefined();
    expect(gate.missingScope({ token: 'scoped-mdp:read' }, 'call')).toBe('mdp:call');
    expect(gate.missingScope({ token: 'all' }, 'admin')).toBeUndefined();
    expect(gate.callerOf({ token: 'scoped-mdp:read' })).toEqual({ principal: 'p:scoped-mdp:read', scopes: ['mdp:read'] });
    expect(gate.callerOf({ token: 'nope' })).toBeUndefined();
    expect(createAuthGate().missingScope({ token: 'x' }, 'admin')).toBeUndefined();
    expect(createAuthGate({ verify: () => true }).missingScope({ token: 'x' }, 'admin')).toBeUndefined();
  });

  it('maps actions to the scope names it is given', () => {
    const gate = createAuthGate(policy, { scopeNames: { call: 'tools.invoke' } });
    expect(gate.scopeNames.call).toBe('tools.invoke');
    expect(gate.missingScope({ token: 'scoped-mdp:call' }, 'call')).toBe('tools.invoke');
  });

  it('stamps the caller on forwarded auth over what the caller said, only when told to', () => {
    const headers = { authorization: 'Bearer scoped-mdp:read,mdp:call' };
    const auth = { scheme: 'Bearer', token: 'scoped-mdp:read,mdp:call' };
    const plain = createAuthGate(policy);
    expect(plain.forwardableAuth(headers, auth)?.metadata?.principal).toBeUndefined();
    const gate = createAuthGate(policy, { forwardCaller: true });
    const forwarded = gate.forwardableAuth(headers, auth);
    expect(forwarded?.token).toBeUndefined();
    expect(forwarded?.metadata).toEqual({
      principal: 'p:scoped-mdp:read,mdp:call',
      scopes: ['mdp:read', 'mdp:call'],
      issuer: 'https://idp.test',
      subject: 'alice',
    });
    // A body's own auth keeps its fields, but cannot claim to be someone else.
    const named = gate.namedAuth({ token: 'for-the-client', metadata: { principal: 'admin', scopes: ['everything'], note: 'hi' } }, auth);
    expect(named.token).toBe('for-the-client');
    expect(named.metadata).toEqual({
      note: 'hi',
      principal: 'p:scoped-mdp:read,mdp:call',
      scopes: ['mdp:read', 'mdp:call'],
      issuer: 'https://idp.test',
      subject: 'alice',
    });
    // A credential with every scope is forwarded with every scope name.
    expect(gate.forwardableAuth({ authorization: 'Bearer all' }, { scheme: 'Bearer', token: 'all' })?.metadata?.scopes).toEqual([
      'mdp:read',
      'mdp:call',
      'mdp:register',
      'mdp:admin',
    ]);
  });

  it('prepares the token of Authorization (or of a cookie) and nothing without a credential', async () => {
    const seen: string[] = [];
    const gate = createAuthGate({ ...policy, prepare: (auth) => (seen.push(auth.token ?? ''), Promise.resolve()) });
    expect(gate.prepare({})).toBeUndefined();
    await gate.prepare({ authorization: 'Bearer abc' });
    await gate.prepare({ authorization: 'bare' });
    expect(gate.prepareAuth(undefined)).toBeUndefined();
    await gate.prepareAuth({ token: 'body' });
    expect(seen).toEqual(['abc', 'bare', 'body']);
    expect(createAuthGate(policy).prepare({ authorization: 'Bearer abc' })).toBeUndefined();
  });
});

describe('Router: registering needs the register scope', () => {
  const refusalOf = (fn: () => void): { refusal: string | undefined; message: string } | undefined => {
    try {
      fn();
      return undefined;
    } catch (error) {
      return error instanceof MdpError ? { refusal: error.refusal, message: error.message } : { refusal: String(error), message: '' };
    }
  };

  it('refuses a session held to scopes without it, takes one with it or with a matching prefix, and holds no mirror link', async () => {
    const router = new Router({ registerScope: 'apps.publish' });
    const register = (scopes: readonly string[] | undefined, id: string, peer?: string) => {
      const { session } = connect(router, { principal: 'p', ...(peer ? { peer } : {}) });
      session.scopes = scopes;
      return refusalOf(() => session.handle({ type: 'registerClient', client: client(id) }));
    };
    expect(register(['mdp:read'], 'a')).toEqual({ refusal: 'missing_scope', message: 'Registering "a" needs scope apps.publish' });
    expect(register(['mdp:register'], 'b')?.refusal).toBe('missing_scope');
    expect(register(['apps.publish'], 'c')).toBeUndefined();
    expect(register(['apps.publish:team-'], 'team-d')).toBeUndefined();
    expect(register(['apps.publish:team-'], 'e')?.refusal).toBe('missing_scope');
    expect(register(undefined, 'f')).toBeUndefined();
    expect(
      router
        .listClients()
        .map((c) => c.id)
        .sort(),
    ).toEqual(['c', 'f', 'team-d']);
    await router.close();
  });
});
