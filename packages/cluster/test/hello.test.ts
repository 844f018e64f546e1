/** A node's hellos (codec.ts `helloBuilder`) and where its clients are mirrored (upstream.ts `upstreamTarget`). */
import { describe, expect, it } from 'vitest';
import { Router } from '@mdp/core';
import type { ClusterHello } from '@mdp/protocol';
import { manualClock } from '@mdp/test-kit';
import { helloBuilder, wireHeaderOf } from '../src/codec.js';
import type { LeaderView } from '../src/election-driver.js';
import { membershipFingerprint, validProof } from '../src/membership.js';
import { resolveOptions, type ClusterNodeOptions } from '../src/options.js';
import { upstreamTarget } from '../src/upstream.js';

const SELF = { wsUrl: 'ws://127.0.0.1:5000', clusterUrl: 'ws://127.0.0.1:5000/mdp/cluster' };
const FOLLOWING: LeaderView = { role: 'follower', term: 3, leaderId: 'L', leaderUrl: 'ws://127.0.0.1:5001' };

function builder(extra: Partial<ClusterNodeOptions> = {}) {
  const clock = manualClock();
  const o = resolveOptions({ router: new Router(), serverId: 'me', clusterId: 'c', clock, ...extra });
  return { clock, hello: helloBuilder(o, SELF) };
}

describe('helloBuilder', () => {
  it('says who this node is, where it listens, its membership, and the election as it stands now', () => {
    const { clock, hello } = builder();
    clock.advance(250);
    expect(hello(FOLLOWING, 'L')).toEqual({
      type: 'clusterHello',
      clusterId: 'c',
      serverId: 'me',
      term: 3,
      timestamp: clock.wallNow(),
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'follower',
      wsUrl: SELF.wsUrl,
      clusterUrl: SELF.clusterUrl,
      leaderId: 'L',
      leaderUrl: FOLLOWING.leaderUrl,
    });
    // No leader known: no leader fields; no secret: no proof.
    const candidate = hello({ role: 'candidate', term: 4, leaderId: undefined, leaderUrl: undefined }, undefined);
    expect(candidate).not.toHaveProperty('leaderId');
    expect(candidate).not.toHaveProperty('auth');
  });

  it('states a static membership by its fingerprint', () => {
    const membership = { mode: 'static', members: ['me', 'L'] } as const;
    const { hello } = builder({ membership });
    expect(hello(FOLLOWING, 'L')).toMatchObject({ membershipMode: 'static', membershipFingerprint: membershipFingerprint(membership) });
  });

  it('proves the first cluster secret to the server it is addressed to, at the wall-clock time', () => {
    const { clock, hello } = builder({ clusterSecret: ['new', 'old'] });
    const sent = hello(FOLLOWING, 'L') as ClusterHello;
    expect(validProof('new', sent, 'L', clock.wallNow())).toBe(true);
    expect(validProof('old', sent, 'L', clock.wallNow())).toBe(false);
    expect(validProof('new', sent, 'someone else', clock.wallNow())).toBe(false);
    // A dialled address whose id is not known yet gets a proof for ''.
    expect(validProof('new', hello(FOLLOWING, undefined) as ClusterHello, '', clock.wallNow())).toBe(true);
  });

  it('the header of every message names the node and its control URL', () => {
    expect(wireHeaderOf({ clusterId: 'c', serverId: 'me' }, SELF.clusterUrl)).toEqual({ clusterId: 'c', serverId: 'me', clusterUrl: SELF.clusterUrl });
  });
});

describe('upstreamTarget', () => {
  const entry = { id: 'L', key: 'loopback:5001', clusterUrl: 'ws://127.0.0.1:5001/mdp/cluster', metaUrl: 'http://127.0.0.1:5001' };

  it('an explicit upstream always wins', () => {
    expect(upstreamTarget('ws://hub:1', 'me', FOLLOWING, entry)).toBe('ws://hub:1');
    expect(upstreamTarget('ws://hub:1', 'me', { ...FOLLOWING, role: 'leader', leaderId: 'me' }, undefined)).toBe('ws://hub:1');
  });

  it('a leader mirrors into nobody', () => {
    expect(upstreamTarget(undefined, 'me', { role: 'leader', term: 3, leaderId: 'me', leaderUrl: SELF.wsUrl }, undefined)).toBeUndefined();
  });

  it('a follower mirrors into the leader: its metadata address, else the URL it announced, else its control URL', () => {
    expect(upstreamTarget(undefined, 'me', FOLLOWING, entry)).toBe('http://127.0.0.1:5001');
    expect(upstreamTarget(undefined, 'me', FOLLOWING, { ...entry, metaUrl: undefined })).toBe(FOLLOWING.leaderUrl);
    expect(upstreamTarget(undefined, 'me', { ...FOLLOWING, leaderUrl: undefined }, { ...entry, metaUrl: undefined })).toBe(entry.clusterUrl);
  });

  it('keeps the mirrors as they are while no leader is known, or the view names this node', () => {
    expect(upstreamTarget(undefined, 'me', { role: 'candidate', term: 4, leaderId: undefined, leaderUrl: undefined }, undefined)).toBe('keep');
    expect(upstreamTarget(undefined, 'me', { ...FOLLOWING, leaderId: 'me' }, undefined)).toBe('keep');
    expect(upstreamTarget(undefined, 'me', { ...FOLLOWING, leaderUrl: undefined }, undefined)).toBe('keep');
  });
});
