/**
 * A real authorization server for the sign-in tests: `oidc-provider` on 127.0.0.1 (an ephemeral
 * port), issuing JWT access tokens for one resource (RFC 8707), with dynamic client registration,
 * authorization code with PKCE, and client credentials. Its login and consent are approved by the
 * test itself (`approve`): no pages, no browser.
 *
 * `sign` mints tokens with the issuer's own key (and any claims, header or key), for the hostile
 * cases the provider would never issue.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export const MDP_SCOPES = ['mdp:read', 'mdp:call', 'mdp:register', 'mdp:admin'] as const;

export interface SigningKey {
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256' = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, privateJwk, publicJwk };
}

export interface SignOptions {
  readonly key?: SigningKey;
  /** Claims over the defaults (iss, aud, sub alice, iat now, exp in ten minutes, scope all). */
  readonly claims?: JWTPayload & { scope?: string };
  /** Header fields over `{ alg, kid }`. */
  readonly header?: Record<string, unknown>;
}

export interface Issuer {
  /** The issuer identifier (`iss`), `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly jwksUrl: string;
  readonly key: SigningKey;
  readonly provider: Provider;
  /** The resource (audience) tokens are issued for. */
  resource: string;
  /** The scopes the next consent grants: default every scope asked for. */
  approve: (asked: readonly string[]) => readonly string[];
  sign(options?: SignOptions): Promise<string>;
  /** A token from the provider's token endpoint (client credentials) with these scopes. */
  clientCredentialsToken(scopes: readonly string[]): Promise<string>;
  close(): Promise<void>;
}

export interface IssuerOptions {
  /** The resource tokens are for (the MDP server's URL); may be set later, before tokens are asked for. */
  readonly resource?: string;
}

/** Start an authorization server; `close()` it in `afterEach`. */
export async function startIssuer(options: IssuerOptions = {}): Promise<Issuer> {
  const key = await signingKey('issuer-key-1');
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer: Issuer = {
    url,
    jwksUrl: `${url}/jwks`,
    key,
    resource: options.resource ?? '',
    approve: (asked) => asked,
    provider: undefined as unknown as Provider,
    async sign({ key: signWith = key, claims = {}, header = {} } = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ scope: MDP_SCOPES.join(' '), ...claims })
        .setProtectedHeader({ alg: signWith.alg, kid: signWith.kid, typ: 'at+jwt', ...header })
        .setIssuer(typeof claims.iss === 'string' ? claims.iss : url)
        .setAudience(claims.aud ?? issuer.resource)
        .setSubject(typeof claims.sub === 'string' ? claims.sub : 'alice')
        .setIssuedAt(claims.iat ?? now)
        .setExpirationTime(claims.exp ?? now + 600)
        .sign(signWith.privateKey);
    },
    async clientCredentialsToken(scopes) {
      const response = await fetch(`${url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('service:service-secret').toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' '), resource: issuer.resource }).toString(),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token endpoint: ${response.status} ${body.error ?? ''} ${body.error_description ?? ''}`);
      return body.access_token;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const provider = new Provider(url, {
    jwks: { keys: [key.privateJwk] },
    scopes: ['openid', 'offline_access', ...MDP_SCOPES],
    clients: [
      {
        client_id: 'service',
        client_secret: 'service-secret',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: MDP_SCOPES.join(' '),
      },
    ],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => issuer.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => ({
          scope: MDP_SCOPES.join(' '),
          audience: indicator,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    ttl: { AccessToken: 600, ClientCredentials: 600, Interaction: 600, Session: 600, Grant: 600, AuthorizationCode: 60 },
  });
  // Plain HTTP to 127.0.0.1 in tests: no proxy in front.
  provider.proxy = false;
  (issuer as { provider: Provider }).provider = provider;
  const callback = provider.callback();
  handler = (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path.startsWith('/interaction/')) {
      void interact(provider, issuer, req, res).catch((error: unknown) => {
        res.writeHead(500).end(String(error));
      });
      return;
    }
    callback(req, res);
  };
  return issuer;
}

/** The test's login and consent: the user is alice; the consent grants what `approve` says. */
async function interact(provider: Provider, issuer: Issuer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session?.accountId ?? 'alice', clientId: String(params.client_id) });
  if (!grant) throw new Error('grant not found');
  // The mdp scopes are client scopes the provider knows (so clients may register them) and the
  // resource's scopes: granted or refused as both.
  const asked = String(params.scope ?? '')
    .split(' ')
    .filter(Boolean);
  const mdp = asked.filter((scope) => (MDP_SCOPES as readonly string[]).includes(scope));
  const granted = issuer.approve(mdp);
  const refused = mdp.filter((scope) => !granted.includes(scope));
  grant.addOIDCScope([...asked.filter((scope) => !mdp.includes(scope)), ...granted].join(' '));
  grant.addResourceScope(issuer.resource, granted.join(' '));
  if (refused.length > 0) {
    grant.rejectOIDCScope(refused.join(' '));
    grant.rejectResourceScope(issuer.resource, refused.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/**
 * Follow an authorization URL as a browser would (keeping the provider's cookies) until it
 * redirects to `redirectUri`; returns that redirect's query.
 */
export async function followAuthorization(authorizationUrl: URL, redirectUri: string): Promise<URLSearchParams> {
  const cookies = new Map<string, string>();
  let next = authorizationUrl.href;
  for (let hop = 0; hop < 12; hop++) {
    if (next.startsWith(redirectUri)) return new URL(next).searchParams;
    const response = await fetch(next, { redirect: 'manual', headers: { cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (pair && eq > 0) cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (location === null) throw new Error(`authorization stopped at ${next}: ${response.status} ${await response.text()}`);
    next = new URL(location, next).href;
  }
  throw new Error('too many redirects');
}

/**
 * A bare key set host, for keys that change and hosts that fail: serves `keys` at `/jwks` and an
 * OIDC discovery document naming it (the issuer is its own URL); counts requests; stops and starts
 * again on the same port.
 */
export class KeyHost {
  keys: JWK[] = [];
  requests = 0;
  port = 0;
  private server: Server | undefined;
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }
  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.requests += 1;
      const body = req.url === '/.well-known/openid-configuration' ? { issuer: this.url, jwks_uri: this.jwksUrl } : { keys: this.keys };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
