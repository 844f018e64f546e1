/** The sign-in flags (settings/access-tokens.ts): what they set, and the combinations refused. */
import { describe, expect, it } from 'vitest';
import { createMdpServer, parseCliArgs } from '../src/index.js';

const run = (argv: string[]) => {
  const parsed = parseCliArgs(argv, {});
  if (parsed.kind !== 'run') throw new Error(`expected run, got ${JSON.stringify(parsed)}`);
  return parsed.options;
};
const problem = (argv: string[]): string => {
  const parsed = parseCliArgs(argv, {});
  if (parsed.kind !== 'error') throw new Error(`expected an error, got ${parsed.kind}`);
  return parsed.messages.join('\n');
};

describe('sign-in flags', () => {
  it('set the access token options, with the documented defaults', () => {
    expect(run(['--auth-issuer', 'https://idp.example']).accessTokens).toEqual({
      issuer: 'https://idp.example',
      clockSkewS: 60,
      refreshIntervalMs: 600_000,
      cooldownMs: 30_000,
      scopeNames: { read: 'mdp:read', call: 'mdp:call', register: 'mdp:register', admin: 'mdp:admin' },
    });
    const options = run([
      ...[
        '--auth-issuer',
        'https://idp.example',
        '--auth-jwks-url',
        'https://idp.example/keys',
        '--auth-audience',
        'https://a.example',
        '--auth-audience',
        'api://mdp',
      ],
      ...['--auth-scope-call', 'tools.invoke', '--auth-token-scopes', 'mdp:read', '--auth-forward-token', '--public-url', 'https://mdp.example.com'],
    ]);
    expect(options.publicUrl).toBe('https://mdp.example.com');
    expect(options.accessTokens).toMatchObject({
      jwksUrl: 'https://idp.example/keys',
      audiences: ['https://a.example', 'api://mdp'],
      scopeNames: { call: 'tools.invoke' },
      staticTokenScopes: ['mdp:read'],
      forwardToken: true,
    });
    expect(run([]).accessTokens).toBeUndefined();
    // Access tokens are a policy: tenancy by principal may keep people apart by iss + sub.
    expect(run(['--auth-issuer', 'https://idp.example', '--tenancy', 'principal']).tenancy).toBe('principal');
  });

  it('refuse what cannot work, saying why', () => {
    expect(problem(['--auth-jwks-url', 'https://idp.example/keys'])).toMatch(/need --auth-issuer/);
    expect(problem(['--auth-forward-token'])).toMatch(/need --auth-issuer/);
    expect(problem(['--auth-issuer', 'https://idp.example', '--auth-scope-read', 'x', '--auth-scope-call', 'x'])).toMatch(/four different scopes/);
    expect(problem(['--auth-issuer', 'https://idp.example', '--auth-scope-read', 'a b'])).toMatch(/one OAuth scope/);
    expect(problem(['--auth-issuer', 'not a url'])).toMatch(/http or https URL/);
    // Keys fetched in the clear from another machine could be anyone's.
    expect(() => createMdpServer({ accessTokens: { issuer: 'http://idp.example' } })).toThrow(/must be https \(http only to this machine\)/);
    expect(() => createMdpServer({ host: '0.0.0.0', accessTokens: { issuer: 'https://idp.example' } })).toThrow(/audience or a public URL/);
    expect(() => createMdpServer({ publicUrl: 'https://mdp.example/?x=1', accessTokens: { issuer: 'https://idp.example' } })).toThrow(/no query/);
  });
});
