/**
 * MCP authorization (2025-11-25) against a real `oidc-provider` (SPEC §17, issue item 3): the MCP
 * SDK's own OAuth client, given only the `/mcp` URL, finds the authorization server through the
 * protected resource metadata (RFC 9728), registers itself, signs in with authorization code and
 * PKCE (the test approves the consent), and lists and calls tools. A consent without the call scope
 * lists but cannot call; a token for another audience is refused.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { descriptor, endpoint, stopAll } from '@mdp/test-kit';
import { registeredClient, startServer, type TestServer } from './harness.js';
import { MDP_SCOPES, followAuthorization, startIssuer, type Issuer } from './oidc.js';

/** The agent host's side of OAuth: kept in memory; the "browser" is `followAuthorization`. */
class AgentOAuth implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  readonly clientMetadata: OAuthClientMetadata = {
    redirect_uris: [this.redirectUrl],
    client_name: 'test agent host',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
    response_types: ['code'],
  };
  authorizationUrl: URL | undefined;
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe('MCP authorization', () => {
  let issuer: Issuer;
  let t: TestServer;
  const agents: Client[] = [];

  beforeEach(async () => {
    issuer = await startIssuer();
    t = await startServer({ accessTokens: { issuer: issuer.url } });
    // What MCP clients ask for: the /mcp URL as the resource (RFC 8707).
    issuer.resource = `${t.http}/mcp`;
  });

  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.close();
    await stopAll();
    await issuer.close();
  });

  /** Sign in as the SDK does: connect, get sent to the provider, come back with a code, connect again. */
  const signIn = async (oauth: AgentOAuth): Promise<Client> => {
    const url = new URL(`${t.http}/mcp`);
    const first = new Client({ name: 'agent', version: '1.0.0' });
    await expect(first.connect(new StreamableHTTPClientTransport(url, { authProvider: oauth }))).rejects.toThrow(UnauthorizedError);
    expect(oauth.authorizationUrl?.origin).toBe(issuer.url);
    const back = await followAuthorization(oauth.authorizationUrl as URL, oauth.redirectUrl);
    const transport = new StreamableHTTPClientTransport(url, { authProvider: oauth });
    await transport.finishAuth(back.get('code') ?? '');
    const client = new Client({ name: 'agent', version: '1.0.0' });
    agents.push(client);
    await client.connect(transport);
    return client;
  };

  const publish = async () => {
    const publisher = await issuer.sign({ claims: { sub: 'publisher', scope: 'mdp:register' } });
    const app = await registeredClient(t, descriptor('app', [endpoint('/status')]), { authorization: `Bearer ${publisher}` });
    app.handler = () => ({ ok: true });
    return app;
  };

  it('answers /mcp without a token with 401 naming the protected resource metadata, which names the issuer and scopes', async () => {
    const refused = await fetch(`${t.http}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(refused.status).toBe(401);
    // The /mcp resource's own document (RFC 9728 §3.1), the one a client derives from the URL.
    const metadataUrl = `${t.http}/.well-known/oauth-protected-resource`;
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}/mcp"`);
    expect(await (await fetch(`${metadataUrl}/mcp`)).json()).toEqual({
      resource: `${t.http}/mcp`,
      authorization_servers: [issuer.url],
      scopes_supported: [...MDP_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'MDP server',
    });
    // The whole server's, which the host API's 401s name.
    const metadata = await fetch(metadataUrl);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toEqual({
      resource: t.http,
      authorization_servers: [issuer.url],
      scopes_supported: [...MDP_SCOPES],
      bearer_methods_supported: ['header'],
      resource_name: 'MDP server',
    });
    const hostApi = await fetch(`${t.http}/mdp/clients`);
    expect(hostApi.status).toBe(401);
    expect(hostApi.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}"`);
  });

  it('signs the MCP SDK client in from the /mcp URL alone; it lists and calls tools', async () => {
    const app = await publish();
    const oauth = new AgentOAuth();
    const client = await signIn(oauth);
    // It asked for the server's scopes, for /mcp as its resource.
    expect(oauth.authorizationUrl?.searchParams.get('scope')).toBe(MDP_SCOPES.join(' '));
    expect(oauth.authorizationUrl?.searchParams.get('resource')).toBe(`${t.http}/mcp`);
    expect(oauth.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('callPath');
    const result = await client.callTool({ name: 'callPath', arguments: { clientId: 'app', method: 'GET', path: '/status' } });
    expect(result.isError).not.toBe(true);
    expect(app.calls.map((call) => call.path)).toEqual(['/status']);
    // The client learns who the agent acts for (the person who consented), never the token.
    expect(app.calls[0]?.auth).toEqual({
      metadata: { principal: expect.stringMatching(/^oidc:/), scopes: [...MDP_SCOPES], issuer: issuer.url, subject: 'alice' },
    });
    // The same token serves the host API: one sign-in for the whole server.
    const token = oauth.tokens()?.access_token ?? '';
    expect((await fetch(`${t.http}/mdp/clients`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it('with a consent that leaves out the call scope: lists, but a call is 403 naming mdp:call', async () => {
    const app = await publish();
    issuer.approve = (asked) => asked.filter((scope) => scope === 'mdp:read');
    const oauth = new AgentOAuth();
    const client = await signIn(oauth);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('callPath');
    const listed = await client.callTool({ name: 'listClients', arguments: {} });
    expect(listed.isError).not.toBe(true);
    // The SDK meets 403 insufficient_scope by asking to sign in again for the scope it names.
    oauth.authorizationUrl = undefined;
    await expect(client.callTool({ name: 'callPath', arguments: { clientId: 'app', method: 'GET', path: '/status' } })).rejects.toThrow(UnauthorizedError);
    expect((oauth.authorizationUrl as URL | undefined)?.searchParams.get('scope')).toBe('mdp:call');
    expect(app.calls).toEqual([]);
    // As a plain request: 403 and the challenge.
    const token = oauth.tokens()?.access_token ?? '';
    const sessionless = await fetch(`${t.http}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'callPath', arguments: {} } }),
    });
    expect(sessionless.status).toBe(403);
    expect(sessionless.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="mdp:call", resource_metadata="${t.http}/.well-known/oauth-protected-resource/mcp"`,
    );
  });

  it('refuses a token for another audience, and the inspector takes the same tokens as MCP', async () => {
    const other = await issuer.sign({ claims: { aud: 'https://another.example/mcp' } });
    const mcp = await fetch(`${t.http}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${other}` }, body: '{}' });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toContain('resource_metadata=');
    // A token for the /mcp resource is one for this server too.
    const forMcp = await issuer.sign({ claims: { aud: `${t.http}/mcp`, scope: 'mdp:admin' } });
    const events = await fetch(`${t.http}/mdp/inspector/events`, { headers: { authorization: `Bearer ${forMcp}` } });
    expect(events.status).toBe(200);
    await events.body?.cancel();
  });
});
