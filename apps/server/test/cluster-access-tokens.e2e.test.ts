/**
 * Access tokens in a cluster (SPEC §10, §17): a call an agent makes on one member reaches a client
 * held by another, and the client is told who called and with which scopes, as on one server. The
 * stamp is made where the token was checked and travels with the call (cluster RPC to the leader,
 * the mirror link back to a follower's own client); the token itself never does.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TestClient, descriptor, endpoint, stopAll } from '@mdp/test-kit';
import type { MdpServer } from '../src/index.js';
import { TEST_CLUSTER_TIMING, clientChange, startTwoServerCluster } from './harness.js';
import { startIssuer, type Issuer } from './oidc.js';

// A lease of seconds keeps the leader where it is for the whole test on a loaded machine.
const CLUSTER = {
  mode: 'auto' as const,
  ...TEST_CLUSTER_TIMING,
  leaseDurationMs: 3000,
  electionTimeoutMinMs: 3500,
  electionTimeoutMaxMs: 4500,
  secret: 'members',
};

describe('calls through a cluster carry the caller who signed in', () => {
  let issuer: Issuer;
  let leader: MdpServer;
  let follower: MdpServer;

  beforeEach(async () => {
    issuer = await startIssuer();
    ({ leader, follower } = await startTwoServerCluster({ clusterId: 'tokens', accessTokens: { issuer: issuer.url } }, CLUSTER));
  });

  afterEach(async () => {
    await stopAll();
    await issuer.close();
  });

  const http = (server: MdpServer) => server.info?.urls.http as string;
  /** A token for `server` (its URL is the audience) of `sub` with these scopes. */
  const tokenFor = (server: MdpServer, sub: string, scopes: readonly string[]) => issuer.sign({ claims: { sub, aud: http(server), scope: scopes.join(' ') } });
  const call = async (server: MdpServer, clientId: string, token: string) =>
    fetch(`${http(server)}/mdp/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ clientId, method: 'POST', path: '/do' }),
    });
  const register = async (server: MdpServer, id: string, listedOn: MdpServer, listedAs: string) => {
    const token = await tokenFor(server, 'publisher', ['mdp:register']);
    const listed = clientChange(listedOn, listedAs, true);
    const client = await TestClient.register(server.info?.urls.ws as string, descriptor(id, [endpoint('/do', 'POST')]), {
      headers: { authorization: `Bearer ${token}` },
    });
    await listed;
    return client;
  };
  const stampOf = (sub: string, scopes: readonly string[]) => ({ principal: expect.stringMatching(/^oidc:/), scopes, issuer: issuer.url, subject: sub });

  it("stamps a follower's call to the leader's client with the caller, never the token", async () => {
    const app = await register(leader, 'app', leader, 'app');
    const alice = await tokenFor(follower, 'alice', ['mdp:call']);
    const answer = await call(follower, 'app', alice);
    expect(answer.status).toBe(200);
    expect(app.calls).toHaveLength(1);
    expect(app.calls[0]?.auth?.metadata).toEqual(stampOf('alice', ['mdp:call']));
    expect(app.calls[0]?.auth?.token).toBeUndefined();
    expect(JSON.stringify(app.calls[0])).not.toContain(alice);
  });

  it("stamps a leader's call to a follower's own client, through the mirror, with the caller", async () => {
    const mirrored = `${follower.info?.serverId}.app`;
    const app = await register(follower, 'app', leader, mirrored);
    const bob = await tokenFor(leader, 'bob', ['mdp:call', 'mdp:read']);
    const answer = await call(leader, mirrored, bob);
    expect(answer.status).toBe(200);
    expect(app.calls).toHaveLength(1);
    expect(app.calls[0]?.auth?.metadata).toEqual(stampOf('bob', ['mdp:call', 'mdp:read']));
    expect(JSON.stringify(app.calls[0])).not.toContain(bob);
  });

  it('refuses on the follower a token without the call scope before anything is forwarded', async () => {
    const app = await register(leader, 'app', leader, 'app');
    const refused = await call(follower, 'app', await tokenFor(follower, 'carol', ['mdp:read']));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('scope="mdp:call"');
    // A token for the leader (another audience) is not taken by the follower either.
    expect((await call(follower, 'app', await tokenFor(leader, 'carol', ['mdp:call']))).status).toBe(401);
    expect(app.calls).toEqual([]);
  });
});
