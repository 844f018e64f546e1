/**
 * A stand-in identity provider for the `jwt-read` scenario: an RSA key, its OIDC discovery document
 * and key set served on 127.0.0.1, and access tokens signed with it (RS256, with every scope). Plain
 * `node:crypto`: the bench signs a handful of tokens, it needs no JOSE library.
 */
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What `--auth-audience` is set to, and every token names. */
export const BENCH_AUDIENCE = 'https://mdp-bench.invalid';
const KID = 'bench-key';

export interface BenchIssuer {
  readonly url: string;
  /** A token for `sub`, valid for an hour, with every scope the server knows. */
  token(sub: string): string;
  close(): Promise<void>;
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function sign(privateKey: KeyObject, claims: Record<string, unknown>): string {
  const input = `${b64({ alg: 'RS256', kid: KID, typ: 'at+jwt' })}.${b64(claims)}`;
  return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`;
}

export async function startBenchIssuer(): Promise<BenchIssuer> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };
  let url = '';
  const server: Server = createServer((req, res) => {
    const body = req.url === '/.well-known/openid-configuration' ? { issuer: url, jwks_uri: `${url}/jwks` } : { keys: [jwk] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token(sub) {
      const now = Math.floor(Date.now() / 1000);
      return sign(privateKey, { iss: url, aud: BENCH_AUDIENCE, sub, iat: now, exp: now + 3600, scope: 'mdp:read mdp:call mdp:register mdp:admin' });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
