import { describe, expect, it } from 'vitest';
import { credentialedOriginProblem, crossSiteWithoutOrigin, isLoopbackHost, isLoopbackHostname, originPolicyFor, originProblem } from '../src/origin-policy.js';

describe('credentialedOriginProblem', () => {
  const policy = originPolicyFor('127.0.0.1', { allowedOrigins: ['https://agent.example'] });
  const refused = (origin: string): string =>
    `Origin ${JSON.stringify(origin)} is another site's: the mdp_auth cookie counts only for this server's own pages, loopback pages and allowed origins`;
  it.each([
    // No Origin: not a browser, or a same-origin GET.
    [{ host: '127.0.0.1:4000' }, undefined],
    [{ host: '127.0.0.1:4000', origin: null }, undefined],
    // Loopback pages, whatever their port or scheme.
    [{ host: '127.0.0.1:4000', origin: 'http://localhost:3000' }, undefined],
    [{ host: 'mdp.example', origin: 'https://127.0.0.1:8443' }, undefined],
    [{ host: '127.0.0.1:4000', origin: 'http://[::1]:3000' }, undefined],
    // The server's own pages, on whatever name it is reached by.
    [{ host: 'mdp.example:4000', origin: 'https://mdp.example:4000' }, undefined],
    [{ host: 'MDP.example:4000', origin: 'https://mdp.example:4000' }, undefined],
    // Allowed origins.
    [{ host: '127.0.0.1:4000', origin: 'https://agent.example' }, undefined],
    // Everyone else: other sites, another port or a sibling name of the server's own, null, garbage.
    [{ host: '127.0.0.1:4000', origin: 'https://evil.example' }, refused('https://evil.example')],
    [{ host: 'mdp.example:4000', origin: 'https://mdp.example:4001' }, refused('https://mdp.example:4001')],
    [{ host: 'mdp.example', origin: 'https://app.mdp.example' }, refused('https://app.mdp.example')],
    [{ host: '127.0.0.1:4000', origin: 'https://agent.example:444' }, refused('https://agent.example:444')],
    [{ host: '127.0.0.1:4000', origin: 'null' }, refused('null')],
    [{ host: '127.0.0.1:4000', origin: 'garbage' }, refused('garbage')],
    [{ host: '127.0.0.1:4000', origin: ['http://localhost', 'https://evil.example'] }, refused('http://localhost, https://evil.example')],
    [{ origin: 'https://evil.example' }, refused('https://evil.example')],
  ])('%j → %s', (headers, problem) => expect(credentialedOriginProblem(headers, policy)).toBe(problem));

  it("does not count on another site's element or no-cors fetch, which sends no Origin but Fetch Metadata", () => {
    // With SameSite=None (or from a sibling name of the same site) the browser attaches the cookie
    // to an <img>, <script> or <link> of another site's page, with no Origin.
    const problem =
      'A cross-site request without Origin (Sec-Fetch-Mode "no-cors"): the mdp_auth cookie counts only for this server\'s own pages, loopback pages and allowed origins';
    expect(
      credentialedOriginProblem({ host: '127.0.0.1:4000', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'script' }, policy),
    ).toBe(problem);
    expect(
      credentialedOriginProblem({ host: '127.0.0.1:4000', 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }, policy),
    ).toBe(problem.replace('cross-site', 'same-site'));
    // The user's own top-level navigation from a link, and the server's own pages, still count.
    expect(
      credentialedOriginProblem({ host: '127.0.0.1:4000', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }, policy),
    ).toBeUndefined();
    expect(
      credentialedOriginProblem({ host: '127.0.0.1:4000', 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }, policy),
    ).toBeUndefined();
    expect(credentialedOriginProblem({ host: '127.0.0.1:4000', 'sec-fetch-site': 'none' }, policy)).toBeUndefined();
    // An Origin the rules allow is decided by the Origin.
    expect(
      credentialedOriginProblem({ host: '127.0.0.1:4000', origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }, policy),
    ).toBeUndefined();
  });
});

describe('originProblem', () => {
  const loopback = originPolicyFor('127.0.0.1');
  it.each([
    [{ host: '127.0.0.1:4000', origin: null }, undefined],
    [{ host: 'localhost:4000', origin: 'http://localhost:3000' }, undefined],
    [{ host: '[::1]:4000', origin: 'http://[::1]:3000' }, undefined],
    [{ host: 'app.localhost', origin: null }, undefined],
    [{ host: null, origin: null }, 'Forbidden: missing or malformed Host header'],
    [{ host: 'evil.example', origin: null }, 'Forbidden: Host "evil.example" is not allowed'],
    [{ host: '127.0.0.1', origin: 'https://evil.example' }, 'Forbidden: Origin "https://evil.example" is not allowed'],
    [{ host: '127.0.0.1', origin: 'garbage' }, 'Forbidden: Origin "garbage" is not allowed'],
  ])('loopback server: %j → %s', (headers, problem) => expect(originProblem(headers, loopback)).toBe(problem));

  it('a server bound wider takes any Host unless hosts are configured; origins can be allowed', () => {
    expect(originProblem({ host: 'box.lan:4000', origin: null }, originPolicyFor('0.0.0.0'))).toBeUndefined();
    const policy = originPolicyFor('0.0.0.0', { allowedHosts: ['Box.lan'], allowedOrigins: ['https://agent.example/'] });
    expect(originProblem({ host: 'box.lan:4000', origin: 'https://agent.example' }, policy)).toBeUndefined();
    expect(originProblem({ host: 'other.lan', origin: null }, policy)).toBe('Forbidden: Host "other.lan" is not allowed');
    expect(originProblem({ host: '127.0.0.1', origin: null }, policy)).toBeUndefined();
  });

  it('takes a page the server served itself, where its name cannot be a rebound one', () => {
    // The inspector on a LAN address calls the host API: same authority, an IP address.
    expect(originProblem({ host: '192.168.1.5:4000', origin: 'http://192.168.1.5:4000' }, originPolicyFor('0.0.0.0'))).toBeUndefined();
    expect(originProblem({ host: '192.168.1.5:4000', origin: 'http://192.168.1.5:4001' }, originPolicyFor('0.0.0.0'))).toBe(
      'Forbidden: Origin "http://192.168.1.5:4001" is not allowed',
    );
    // A DNS name on a server bound wider with no hosts configured may be a rebound one.
    expect(originProblem({ host: 'evil.example:4000', origin: 'http://evil.example:4000' }, originPolicyFor('0.0.0.0'))).toBe(
      'Forbidden: Origin "http://evil.example:4000" is not allowed',
    );
    // An allowed host name was checked: its own pages may call.
    expect(originProblem({ host: 'box.lan:4000', origin: 'http://box.lan:4000' }, originPolicyFor('127.0.0.1', { allowedHosts: ['box.lan'] }))).toBeUndefined();
    expect(originProblem({ host: '127.0.0.1', origin: 'null' }, originPolicyFor('127.0.0.1'))).toBe('Forbidden: Origin "null" is not allowed');
  });
});

describe('crossSiteWithoutOrigin', () => {
  const meta = (site: string, mode: string, dest: string) => ({ 'sec-fetch-site': site, 'sec-fetch-mode': mode, 'sec-fetch-dest': dest });

  it("refuses another site's element or no-cors request that names no Origin", () => {
    expect(crossSiteWithoutOrigin(meta('cross-site', 'no-cors', 'script'))).toBe('Forbidden: a cross-site request without Origin (Sec-Fetch-Mode "no-cors")');
    expect(crossSiteWithoutOrigin(meta('same-site', 'no-cors', 'image'))).toMatch(/^Forbidden: a same-site request/);
    // A frame is a navigation the page chose, not the user.
    expect(crossSiteWithoutOrigin(meta('cross-site', 'navigate', 'iframe'))).toMatch(/^Forbidden/);
  });

  it('lets through programs, the same origin, what the user typed or followed, and requests with an Origin (judged by it)', () => {
    expect(crossSiteWithoutOrigin({})).toBeUndefined();
    expect(crossSiteWithoutOrigin(meta('same-origin', 'no-cors', 'script'))).toBeUndefined();
    expect(crossSiteWithoutOrigin(meta('none', 'navigate', 'document'))).toBeUndefined();
    expect(crossSiteWithoutOrigin(meta('cross-site', 'navigate', 'document'))).toBeUndefined();
    expect(crossSiteWithoutOrigin({ ...meta('cross-site', 'cors', 'empty'), origin: 'http://localhost:5173' })).toBeUndefined();
  });
});

describe('loopback', () => {
  it.each([
    'localhost',
    '127.0.0.1',
    '127.1',
    '127.0.1',
    '127.255.255.254',
    '0x7f.0.0.1',
    '2130706433',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
    'app.localhost',
  ])('%s is loopback', (host) => expect(isLoopbackHost(host)).toBe(true));

  it.each(['0.0.0.0', '::', '', '192.168.1.5', '128.0.0.1', '127.evil.example', 'evil.example', 'a@127.0.0.1', '127.0.0.1.evil.example', '::ffff:10.0.0.1'])(
    '%s is not',
    (host) => expect(isLoopbackHost(host)).toBe(false),
  );

  it('reads a Host header name the same way (brackets for IPv6)', () => {
    expect(isLoopbackHostname('127.1')).toBe(true);
    expect(isLoopbackHostname('[0::1]')).toBe(true);
    expect(isLoopbackHostname('::1')).toBe(false);
  });

  it('a server bound to any loopback spelling checks the Host header', () => {
    for (const bind of ['127.1', '127.0.0.2', '0x7f.1', '::1', '0:0:0:0:0:0:0:1']) {
      expect(originProblem({ host: 'evil.example', origin: null }, originPolicyFor(bind))).toBe('Forbidden: Host "evil.example" is not allowed');
      expect(originProblem({ host: '127.1:4000', origin: null }, originPolicyFor(bind))).toBeUndefined();
    }
  });
});
