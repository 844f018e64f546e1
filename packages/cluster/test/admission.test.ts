/** Admission as a pure transition: every way a hello or a metadata document is refused, ignored or admitted. */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type ClusterHello, type MetaDocument } from '@mdp/protocol';
import {
  VIEW_PATIENCE_ROUNDS,
  entryOf,
  initialAdmission,
  isMemberAddress,
  memberEntries,
  roundView,
  step,
  type AdmissionConfig,
  type AdmissionEvent,
  type AdmissionState,
} from '../src/admission.js';
import { HELLO_MAX_AGE_MS, helloProof, membershipFingerprint, type Membership } from '../src/membership.js';

const SELF = '127.0.0.1:5000';
const SELF_URL = 'ws://127.0.0.1:5000/mdp/cluster';
const PEER = '127.0.0.1:5001';
const NOW = 1_700_000_000_000;

function config(membership: Membership = { mode: 'dynamic' }, secrets: string[] = []): AdmissionConfig {
  return { selfId: SELF, clusterId: 'c', membership, fingerprint: membershipFingerprint(membership), secrets };
}

/** A node that listens (admission knows its own URL). */
function started(c: AdmissionConfig = config()): AdmissionState {
  return step(initialAdmission(c), { type: 'start', clusterUrl: SELF_URL }, NOW).state;
}

function hello(serverId = PEER, fields: Partial<ClusterHello> = {}): ClusterHello {
  const port = serverId.split(':')[1] ?? '1';
  return {
    type: 'clusterHello',
    clusterId: 'c',
    serverId,
    term: 0,
    timestamp: NOW,
    membershipMode: 'dynamic',
    membershipFingerprint: 'dynamic',
    role: 'follower',
    wsUrl: `ws://127.0.0.1:${port}`,
    clusterUrl: `ws://127.0.0.1:${port}/mdp/cluster`,
    ...fields,
  };
}

function meta(serverId = PEER, cluster: Partial<MetaDocument['cluster']> = {}, port = serverId.split(':')[1] ?? '1'): MetaDocument {
  const base = `127.0.0.1:${port}`;
  return {
    protocol: 'mdp',
    protocolVersion: PROTOCOL_VERSION,
    supportedProtocolRanges: [...SUPPORTED_PROTOCOL_RANGES],
    serverId,
    endpoints: { ws: `ws://${base}`, httpLoop: `http://${base}/mdp/http-loop`, auth: `http://${base}/mdp/auth`, meta: `http://${base}/mdp/meta`, cluster: `ws://${base}/mdp/cluster` },
    features: { upstreamProxy: true, clusterControl: true },
    cluster: {
      id: 'c',
      membershipMode: 'dynamic',
      membershipFingerprint: 'dynamic',
      role: 'follower',
      term: 0,
      leaderId: '',
      leaderUrl: '',
      leaseDurationMs: 4000,
      knownMemberCount: 1,
      reachableMemberCount: 1,
      quorumSize: 1,
      hasQuorum: true,
      ...cluster,
    },
  };
}

const metaEvent = (doc: MetaDocument, url = doc.endpoints.meta.replace('/mdp/meta', '')): AdmissionEvent => ({ type: 'meta', meta: doc, url });

describe('admission of hellos', () => {
  it('admits a compatible peer that dialled in as an observer: its endpoint is recorded, it is no member', () => {
    const result = step(started(), { type: 'hello', hello: hello() }, NOW);
    expect(result.refusal).toBeUndefined();
    expect(result.effects).toEqual([]);
    expect(entryOf(result.state, PEER)).toMatchObject({ clusterUrl: `ws://127.0.0.1:5001/mdp/cluster`, wsUrl: 'ws://127.0.0.1:5001' });
    expect(memberEntries(result.state)).toEqual([]);
  });

  it.each([
    ['another cluster id', { clusterId: 'other' }, /cluster id "other"/],
    ['another membership mode', { membershipMode: 'static' as const }, /membership mode static/],
    ['another fingerprint', { membershipFingerprint: 'x' }, /fingerprint differs/],
  ])('refuses %s and logs it once per address', (_what, fields, reason) => {
    const first = step(started(), { type: 'hello', hello: hello(PEER, fields) }, NOW);
    expect(first.refusal).toMatch(reason);
    expect(first.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.peer_refused', fields: expect.objectContaining({ peer: PEER, source: 'hello' }) }]);
    const again = step(first.state, { type: 'hello', hello: hello(PEER, fields) }, NOW);
    expect(again.refusal).toMatch(reason);
    expect(again.effects).toEqual([]);
    expect(entryOf(again.state, PEER)).toBeUndefined();
  });

  it('with static membership: refuses an id off the list, admits a listed one without a new member effect', () => {
    const membership: Membership = { mode: 'static', members: [SELF, PEER] };
    const state = started(config(membership));
    expect(state.members).toEqual(new Set([PEER]));
    const fingerprint = membershipFingerprint(membership);
    const stranger = step(state, { type: 'hello', hello: hello('127.0.0.1:5009', { membershipMode: 'static', membershipFingerprint: fingerprint }) }, NOW);
    expect(stranger.refusal).toMatch(/not a static member/);
    const member = step(state, { type: 'hello', hello: hello(PEER, { membershipMode: 'static', membershipFingerprint: fingerprint }) }, NOW);
    expect(member.refusal).toBeUndefined();
    expect(member.effects).toEqual([]);
    expect(memberEntries(member.state).map((e) => e.id)).toEqual([PEER]);
  });

  it('refuses a hello with an unusable cluster URL, and one claiming to be this server', () => {
    expect(step(started(), { type: 'hello', hello: hello(PEER, { clusterUrl: 'not a url' }) }, NOW).refusal).toBe('invalid cluster URL');
    expect(step(started(), { type: 'hello', hello: hello(SELF) }, NOW).refusal).toBe('that is this server');
  });

  it('reports a server id at a second endpoint as a configuration error, once, and refuses it each time', () => {
    const known = step(started(), { type: 'hello', hello: hello() }, NOW).state;
    const elsewhere = hello(PEER, { clusterUrl: 'ws://127.0.0.1:6000/mdp/cluster' });
    const first = step(known, { type: 'hello', hello: elsewhere }, NOW);
    expect(first.refusal).toMatch(/duplicate server id/);
    const error = { kind: 'duplicate-server-id', serverId: PEER, firstUrl: 'ws://127.0.0.1:5001/mdp/cluster', secondUrl: 'ws://127.0.0.1:6000/mdp/cluster' };
    expect(first.effects).toEqual([
      { type: 'log', level: 'error', event: 'cluster.duplicate_server_id', fields: expect.objectContaining(error) },
      { type: 'configError', error },
    ]);
    const again = step(first.state, { type: 'hello', hello: elsewhere }, NOW);
    expect(again.refusal).toMatch(/duplicate server id/);
    expect(again.effects).toEqual([]);
    // The first endpoint keeps the id.
    expect(entryOf(again.state, PEER)?.clusterUrl).toBe('ws://127.0.0.1:5001/mdp/cluster');
  });

  it('our own id from another endpoint is a configuration error too', () => {
    const result = step(started(), { type: 'hello', hello: hello(SELF, { clusterUrl: 'ws://127.0.0.1:7000/mdp/cluster' }) }, NOW);
    expect(result.effects).toContainEqual({ type: 'configError', error: { kind: 'duplicate-server-id', serverId: SELF, firstUrl: SELF_URL, secondUrl: 'ws://127.0.0.1:7000/mdp/cluster' } });
  });

  describe('with a cluster secret', () => {
    const secret = 's3cret';
    const proven = (fields: Partial<ClusterHello> = {}, to = SELF, withSecret = secret): ClusterHello => {
      const h = hello(PEER, fields);
      return { ...h, auth: helloProof(withSecret, h.clusterId, h.serverId, h.timestamp, to) };
    };

    it('admits a hello proving it for this server, within the age limit either way of the wall clock', () => {
      const state = started(config(undefined, ['other', secret]));
      expect(step(state, { type: 'hello', hello: proven() }, NOW).refusal).toBeUndefined();
      expect(step(state, { type: 'hello', hello: proven() }, NOW + HELLO_MAX_AGE_MS).refusal).toBeUndefined();
      expect(step(state, { type: 'hello', hello: proven() }, NOW - HELLO_MAX_AGE_MS).refusal).toBeUndefined();
    });

    it('refuses no proof, a wrong secret, a proof for another server, and a hello too old or from too far ahead', () => {
      const state = started(config(undefined, [secret]));
      const refused = (h: ClusterHello, now = NOW) => step(state, { type: 'hello', hello: h }, now);
      for (const result of [
        refused(hello()),
        refused(proven({}, SELF, 'wrong')),
        refused(proven({}, '127.0.0.1:5002')),
        refused(proven(), NOW + HELLO_MAX_AGE_MS + 1),
        refused(proven(), NOW - HELLO_MAX_AGE_MS - 1),
      ]) {
        expect(result.refusal).toBe('cluster secret not proven');
        expect(entryOf(result.state, PEER)).toBeUndefined();
      }
      const first = refused(hello());
      expect(first.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.peer_refused', fields: expect.objectContaining({ reason: 'no valid cluster secret proof' }) }]);
      expect(step(first.state, { type: 'hello', hello: hello() }, NOW).effects).toEqual([]);
    });
  });
});

describe('admission of discovered metadata', () => {
  it('makes a compatible peer a member (once) and dials it every time', () => {
    const first = step(started(), metaEvent(meta()), NOW);
    expect(first.effects).toEqual([
      { type: 'member', id: PEER },
      { type: 'dial', url: 'ws://127.0.0.1:5001/mdp/cluster', id: PEER },
    ]);
    expect(entryOf(first.state, PEER)).toMatchObject({ metaUrl: 'http://127.0.0.1:5001', wsUrl: 'ws://127.0.0.1:5001' });
    expect(memberEntries(first.state).map((e) => e.id)).toEqual([PEER]);
    const again = step(first.state, metaEvent(meta()), NOW);
    expect(again.effects).toEqual([{ type: 'dial', url: 'ws://127.0.0.1:5001/mdp/cluster', id: PEER }]);
  });

  it('turns an observer into a member once discovery finds it, keeping what its hello told', () => {
    const observer = step(started(), { type: 'hello', hello: hello() }, NOW).state;
    const found = step(observer, metaEvent(meta()), NOW);
    expect(found.effects[0]).toEqual({ type: 'member', id: PEER });
    expect(memberEntries(found.state)).toHaveLength(1);
  });

  it('reports a leader that holds quorum, and not one without', () => {
    const leading = step(started(), metaEvent(meta(PEER, { role: 'leader', hasQuorum: true })), NOW);
    expect(leading.effects.map((e) => e.type)).toEqual(['member', 'leaderSeen', 'dial']);
    const lost = step(started(), metaEvent(meta(PEER, { role: 'leader', hasQuorum: false })), NOW);
    expect(lost.effects.map((e) => e.type)).toEqual(['member', 'dial']);
  });

  it('ignores a server without cluster control', () => {
    const doc = { ...meta(), features: { upstreamProxy: false, clusterControl: false } };
    const result = step(started(), metaEvent(doc), NOW);
    expect(result.effects).toEqual([]);
    expect(entryOf(result.state, PEER)).toBeUndefined();
  });

  it('ignores (and logs once) a document naming another address than the one it came from', () => {
    const result = step(started(), metaEvent(meta(), 'http://127.0.0.1:5999'), NOW);
    expect(result.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.meta_elsewhere', fields: expect.objectContaining({ url: 'http://127.0.0.1:5999' }) }]);
    expect(entryOf(result.state, PEER)).toBeUndefined();
    expect(step(result.state, metaEvent(meta(), 'http://127.0.0.1:5999'), NOW).effects).toEqual([]);
  });

  it('neither dials nor counts a refused peer', () => {
    const result = step(started(), metaEvent(meta(PEER, { id: 'other' })), NOW);
    expect(result.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.peer_refused', fields: expect.objectContaining({ source: 'discovery' }) }]);
    expect(result.state.members.size).toBe(0);
  });

  it('says nothing about its own document, but reports its own id served from another address', () => {
    expect(step(started(), metaEvent(meta(SELF)), NOW).effects).toEqual([]);
    const twin = step(started(), metaEvent(meta(SELF, {}, '5100')), NOW);
    expect(twin.effects).toContainEqual({
      type: 'configError',
      error: { kind: 'duplicate-server-id', serverId: SELF, firstUrl: SELF_URL, secondUrl: 'ws://127.0.0.1:5100/mdp/cluster' },
    });
  });

  it('logs a refusal by a peer once per address and reason', () => {
    const first = step(started(), { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'nope' }, NOW);
    expect(first.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.refused_by_peer', fields: { url: 'ws://x:1/mdp/cluster', reason: 'nope' } }]);
    expect(step(first.state, { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'nope' }, NOW).effects).toEqual([]);
    expect(step(first.state, { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'other' }, NOW).effects).toHaveLength(1);
  });
});

describe('views', () => {
  const withMember = (): AdmissionState => step(started(), metaEvent(meta()), NOW).state;

  it('knows its own and its members\' addresses, in any spelling of loopback, and nothing else', () => {
    const state = withMember();
    expect(isMemberAddress(state, 'http://localhost:5000')).toBe(true);
    expect(isMemberAddress(state, '127.0.0.1:5001')).toBe(true);
    expect(isMemberAddress(state, '5002')).toBe(false);
    expect(isMemberAddress(state, 'not a target at all ::')).toBe(false);
    // An observer's address hides no member, but it is not one.
    const observed = step(started(), { type: 'hello', hello: hello('127.0.0.1:5003') }, NOW).state;
    expect(isMemberAddress(observed, '127.0.0.1:5003')).toBe(false);
  });

  it('a round is clean when every silent address is a member or ours, or on patience once peers are known', () => {
    const state = withMember();
    expect(roundView(state, 1, [], false)).toEqual({ clean: true, unknown: [] });
    expect(roundView(state, 1, ['http://127.0.0.1:5000', 'http://127.0.0.1:5001'], true)).toEqual({ clean: true, unknown: [] });
    expect(roundView(state, 1, ['http://127.0.0.1:5002'], true)).toEqual({ clean: false, unknown: ['http://127.0.0.1:5002'] });
    expect(roundView(state, VIEW_PATIENCE_ROUNDS - 1, ['http://127.0.0.1:5002'], true).clean).toBe(false);
    expect(roundView(state, VIEW_PATIENCE_ROUNDS, ['http://127.0.0.1:5002'], true).clean).toBe(true);
    // Knowing nobody, a node never stands alone on patience.
    expect(roundView(state, 100, ['http://127.0.0.1:5002'], false).clean).toBe(false);
  });

  it('with static membership every round is clean: the list is the whole truth', () => {
    const state = started(config({ mode: 'static', members: [SELF, PEER] }));
    expect(roundView(state, 1, ['http://127.0.0.1:5002'], false).clean).toBe(true);
  });
});
