/**
 * Signing in with an identity provider (SPEC §17): the protected resource metadata (RFC 9728) that
 * agent hosts read to find the authorization server, at `/.well-known/oauth-protected-resource` (the
 * whole server) and `/.well-known/oauth-protected-resource/mcp` (the form the MCP authorization spec
 * derives from the `/mcp` URL); and the key set fetched once the server listens, let go on close.
 * Only with access tokens: without them both paths are the empty 404 of every unknown path.
 */
import type { IncomingMessage } from 'node:http';
import { AUTH_ACTIONS } from '@mdp/core';
import { MCP_PATH } from './mcp-http.js';
import { PROTECTED_RESOURCE_PATH } from '../context.js';
import type { ServerContext, ServerFeature } from '../feature.js';
import { readRoute } from '../read-route.js';

export interface AccessTokensFeatureOptions {
  /** The issuer agents sign in with (`authorization_servers`). */
  readonly issuer: string;
}

export function accessTokensFeature(ctx: ServerContext, options: AccessTokensFeatureOptions): ServerFeature {
  const tokens = ctx.accessTokens;
  const document = (suffix: string) => ({
    resource: `${ctx.canonicalUrl() ?? ''}${suffix}`,
    authorization_servers: [options.issuer],
    scopes_supported: AUTH_ACTIONS.map((action) => ctx.gate.scopeNames[action]),
    bearer_methods_supported: ['header'],
    resource_name: 'MDP server',
  });
  return {
    name: 'access-tokens',
    routes(app) {
      if (!tokens) return;
      // Public documents: any page or agent may read them.
      const headers = { 'cache-control': 'max-age=300', 'access-control-allow-origin': '*' };
      readRoute(app, PROTECTED_RESOURCE_PATH, undefined, (c) => c.json(document(''), 200, headers));
      readRoute(app, `${PROTECTED_RESOURCE_PATH}${MCP_PATH}`, undefined, (c) => c.json(document(MCP_PATH), 200, headers));
    },
    start() {
      void tokens?.start();
    },
    close() {
      tokens?.close();
    },
  };
}

/**
 * What the listener runs before it dispatches a request or upgrade (listener.ts `BeforeDispatch`):
 * the gate's `prepare`, which checks a new access token. A token in the query string is never read
 * (RFC 6750 §2.3 is not supported: URLs end up in logs and histories); the request goes on without
 * it and is refused for want of a credential, and the log says why.
 */
export function beforeDispatch(ctx: ServerContext): ((request: IncomingMessage) => Promise<void> | undefined) | undefined {
  if (!ctx.accessTokens) return undefined;
  return (request) => {
    const url = request.url;
    if (url?.includes('access_token=') && /[?&]access_token=/.test(url)) {
      ctx.logger.info('auth.token_refused', {
        reason: 'access token in the query string: send it in the Authorization header (Bearer)',
        path: url.split('?')[0],
      });
    }
    return ctx.gate.prepare(request.headers);
  };
}
