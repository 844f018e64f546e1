import { describe, expect, it } from 'vitest';
import { connectionOptions, optionsProblem, type NatsBusOptions } from '../src/options.js';
import { createNatsBus } from '../src/index.js';

const base: NatsBusOptions = { servers: 'nats://127.0.0.1:4222', nodeId: 'n1' };

describe('bus options', () => {
  it('accept several servers, one way to authenticate, TLS with a CA', () => {
    expect(optionsProblem({ ...base, servers: ['nats://a:4222', 'tls://b:4222', 'c:4222'] })).toBeUndefined();
    const tls = connectionOptions({ ...base, tls: { caFile: '/ca.pem' }, auth: { user: 'u', password: 'p' } }, '_INBOX_mdp.x', 'n');
    expect(tls).toMatchObject({
      servers: ['nats://127.0.0.1:4222'],
      tls: { caFile: '/ca.pem' },
      user: 'u',
      pass: 'p',
      inboxPrefix: '_INBOX_mdp.x',
      maxReconnectAttempts: -1,
    });
    expect(connectionOptions({ ...base, auth: { token: 't' } }, 'i', 'n')).toMatchObject({ token: 't' });
    expect(connectionOptions({ ...base, tls: true }, 'i', 'n').tls).toEqual({});
  });

  it('refuse what cannot work, with a message that says why', () => {
    expect(optionsProblem({ ...base, servers: [] })).toMatch(/at least one/);
    expect(optionsProblem({ ...base, servers: 'http://a:80' })).toMatch(/not a NATS URL/);
    expect(optionsProblem({ ...base, nodeId: '' })).toMatch(/node id/);
    expect(optionsProblem({ ...base, prefix: 'a.b' })).toMatch(/prefix/);
    expect(optionsProblem({ ...base, auth: { token: 't', user: 'u', password: 'p' } })).toMatch(/one of/);
    expect(optionsProblem({ ...base, auth: { user: 'u' } })).toMatch(/password/);
    expect(optionsProblem({ ...base, ttlMs: 500 })).toMatch(/TTL/);
    expect(optionsProblem({ ...base, maxMessageBytes: 10 })).toMatch(/largest message/);
    expect(optionsProblem({ ...base, replicas: 2 })).toMatch(/replicas/);
    expect(() =>
      createNatsBus({ ...base, servers: [] }, { call: async () => ({ ok: true, data: null }), descriptor: () => undefined, replaced: () => undefined }),
    ).toThrow(TypeError);
  });

  it('a creds file that cannot be read is named in the error', () => {
    expect(() => connectionOptions({ ...base, auth: { credsFile: '/nonexistent/node.creds' } }, 'i', 'n')).toThrow(/\/nonexistent\/node\.creds/);
  });
});
