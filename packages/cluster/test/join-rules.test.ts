/** Admission as a pure transition: every way a hello or a metadata document is refused, ignored or admitted. */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, SUPPORTED_PROTOCOL_RANGES, type ClusterHello, type MetaDocument } from '@mdp/protocol';
import {
  SECRET_REFUSAL,
  VIEW_PATIENCE_ROUNDS,
  allLinked,
  awaitingProof,
  entryOf,
  initialAdmission,
  isClusterServerId,
  isMemberAddress,
  mayServeDefaultPort,
  memberEntries,
  roundView,
  step,
  unlinkedOnHost,
  type AdmissionConfig,
  type AdmissionEvent,
  type AdmissionState,
} from '../src/join-rules.js';
import { HELLO_MAX_AGE_MS, helloProof, membershipFingerprint, type Membership } from '../src/membership.js';

const SELF = '127.0.0.1:5000';
const SELF_URL = 'ws://127.0.0.1:5000/mdp/cluster';
const PEER = '127.0.0.1:5001';
const NOW = 1_700_000_000_000;

function config(membership: Membership = { mode: 'dynamic' }, secrets: string[] = [], defaultUrl?: string): AdmissionConfig {
  return { selfId: SELF, clusterId: 'c', membership, fingerprint: membershipFingerprint(membership), secrets, ...(defaultUrl ? { defaultUrl } : {}) };
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
    endpoints: {
      ws: `ws://${base}`,
      httpLoop: `http://${base}/mdp/http-loop`,
      auth: `http://${base}/mdp/auth`,
      meta: `http://${base}/mdp/meta`,
      cluster: `ws://${base}/mdp/cluster`,
    },
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
    expect(first.effects).toEqual([
      { type: 'log', level: 'warn', event: 'cluster.peer_refused', fields: expect.objectContaining({ peer: PEER, source: 'hello' }) },
    ]);
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
    expect(result.effects).toContainEqual({
      type: 'configError',
      error: { kind: 'duplicate-server-id', serverId: SELF, firstUrl: SELF_URL, secondUrl: 'ws://127.0.0.1:7000/mdp/cluster' },
    });
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
      expect(first.effects).toEqual([
        { type: 'log', level: 'warn', event: 'cluster.peer_refused', fields: expect.objectContaining({ reason: 'no valid cluster secret proof' }) },
      ]);
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
    expect(result.effects).toEqual([
      { type: 'log', level: 'warn', event: 'cluster.meta_elsewhere', fields: expect.objectContaining({ url: 'http://127.0.0.1:5999' }) },
    ]);
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

  it('neither dials nor counts a document whose cluster endpoint is no URL', () => {
    const doc = meta();
    const broken = { ...doc, endpoints: { ...doc.endpoints, cluster: 'not a url' } };
    const result = step(started(), metaEvent(broken, 'not a url'), NOW);
    expect(result.effects).toEqual([]);
    expect(result.state.members.size).toBe(0);
  });

  it("reports a member's id found at a second address as a configuration error, and neither dials nor counts it", () => {
    const member = step(started(), metaEvent(meta()), NOW).state;
    const twin = step(member, metaEvent(meta(PEER, {}, '5100')), NOW);
    const error = { kind: 'duplicate-server-id', serverId: PEER, firstUrl: 'ws://127.0.0.1:5001/mdp/cluster', secondUrl: 'ws://127.0.0.1:5100/mdp/cluster' };
    expect(twin.effects).toEqual([
      { type: 'log', level: 'error', event: 'cluster.duplicate_server_id', fields: expect.objectContaining(error) },
      { type: 'configError', error },
    ]);
    expect(memberEntries(twin.state).map((e) => e.clusterUrl)).toEqual(['ws://127.0.0.1:5001/mdp/cluster']);
  });

  it('logs a refusal by a peer once per address and reason', () => {
    const first = step(started(), { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'nope' }, NOW);
    expect(first.effects).toEqual([{ type: 'log', level: 'warn', event: 'cluster.refused_by_peer', fields: { url: 'ws://x:1/mdp/cluster', reason: 'nope' } }]);
    expect(step(first.state, { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'nope' }, NOW).effects).toEqual([]);
    expect(step(first.state, { type: 'refusedBy', url: 'ws://x:1/mdp/cluster', reason: 'other' }, NOW).effects).toHaveLength(1);
  });
});

describe('with a cluster secret, members must prove it', () => {
  const secret = 's3cret';
  const proven = (serverId = PEER, withSecret = secret): ClusterHello => {
    const h = hello(serverId);
    return { ...h, auth: helloProof(withSecret, h.clusterId, h.serverId, h.timestamp, SELF) };
  };
  const secured = () => started(config(undefined, [secret]));
  const types = (effects: readonly { type: string }[]) => effects.map((e) => e.type);

  it('a discovered peer is dialled but awaits proof; its proving hello makes it a member', () => {
    const found = step(secured(), metaEvent(meta()), NOW);
    expect(types(found.effects)).toEqual(['dial']);
    expect(found.state.members.size).toBe(0);
    expect(awaitingProof(found.state)).toBe(true);
    const linked = step(found.state, { type: 'hello', hello: proven() }, NOW);
    expect(linked.refusal).toBeUndefined();
    expect(linked.effects).toEqual([{ type: 'member', id: PEER }]);
    expect(awaitingProof(linked.state)).toBe(false);
  });

  it('a peer that proved it before discovery found it becomes a member on discovery', () => {
    const observer = step(secured(), { type: 'hello', hello: proven() }, NOW).state;
    expect(types(step(observer, metaEvent(meta()), NOW).effects)).toEqual(['member', 'dial']);
  });

  it("another user's server (another secret) on the range never becomes a member, and is no longer awaited", () => {
    const found = step(secured(), metaEvent(meta()), NOW).state;
    // Its hello proves another secret.
    const refused = step(found, { type: 'hello', hello: proven(PEER, 'theirs') }, NOW);
    expect(refused.refusal).toBe(SECRET_REFUSAL);
    expect(awaitingProof(refused.state)).toBe(false);
    // Found again every round: still dialled (it may change), never awaited or counted.
    const again = step(refused.state, metaEvent(meta()), NOW);
    expect(types(again.effects)).toEqual(['dial']);
    expect(awaitingProof(again.state)).toBe(false);
    expect(again.state.members.size).toBe(0);
  });

  it('a peer that refuses our hello for the secret is not awaited either', () => {
    const found = step(secured(), metaEvent(meta()), NOW).state;
    const refused = step(found, { type: 'refusedBy', url: 'ws://127.0.0.1:5001/mdp/cluster', reason: SECRET_REFUSAL }, NOW);
    expect(awaitingProof(refused.state)).toBe(false);
    // Another refusal reason says nothing about the secret.
    const other = step(found, { type: 'refusedBy', url: 'ws://127.0.0.1:5001/mdp/cluster', reason: 'Duplicate control link' }, NOW);
    expect(awaitingProof(other.state)).toBe(true);
  });

  it('a foreign peer that later proves the secret (its secret was rotated in) is awaited no more, and a member once found again', () => {
    const found = step(secured(), metaEvent(meta()), NOW).state;
    const foreign = step(found, { type: 'hello', hello: proven(PEER, 'theirs') }, NOW).state;
    expect(foreign.foreign).toEqual(new Set([PEER]));
    const proving = step(foreign, { type: 'hello', hello: proven() }, NOW);
    expect(proving.refusal).toBeUndefined();
    // Foreign peers are not awaited, so proving alone makes no member...
    expect(proving.effects).toEqual([]);
    expect(proving.state.foreign.size).toBe(0);
    // ...the next discovery round does.
    expect(types(step(proving.state, metaEvent(meta()), NOW).effects)).toEqual(['member', 'dial']);
  });

  it('a refusal for the secret from an address nobody was found at changes nothing but the log', () => {
    const state = secured();
    const result = step(state, { type: 'refusedBy', url: 'ws://127.0.0.1:5009/mdp/cluster', reason: SECRET_REFUSAL }, NOW);
    expect(result.effects.map((e) => e.type)).toEqual(['log']);
    expect(result.state.foreign.size).toBe(0);
  });

  it("a hello claiming a member's id without the proof does not demote the member", () => {
    const member = step(step(secured(), metaEvent(meta()), NOW).state, { type: 'hello', hello: proven() }, NOW).state;
    const forged = step(member, { type: 'hello', hello: hello() }, NOW);
    expect(forged.refusal).toBe(SECRET_REFUSAL);
    expect(memberEntries(forged.state).map((e) => e.id)).toEqual([PEER]);
  });

  it('without a secret, metadata alone makes a member, as before', () => {
    const found = step(started(), metaEvent(meta()), NOW);
    expect(types(found.effects)).toEqual(['member', 'dial']);
    expect(awaitingProof(found.state)).toBe(false);
  });
});

describe('members gone for good', () => {
  const member = () => step(started(), metaEvent(meta()), NOW).state;

  it('are no members any more, nor in the directory; rediscovered, they are members again', () => {
    const gone = step(member(), { type: 'gone', id: PEER }, NOW).state;
    expect(gone.members.size).toBe(0);
    expect(entryOf(gone, PEER)).toBeUndefined();
    expect(gone.departed).toEqual(new Set([PEER]));
    // Back at another address (a restart on another port): no duplicate id, a member again.
    const back = step(gone, metaEvent(meta(PEER, {}, '5010')), NOW);
    expect(types(back.effects)).toEqual(['member', 'dial']);
    expect(entryOf(back.state, PEER)?.clusterUrl).toBe('ws://127.0.0.1:5010/mdp/cluster');
  });

  it('only members can go', () => {
    const state = started();
    expect(step(state, { type: 'gone', id: PEER }, NOW).state).toBe(state);
  });

  function types(effects: readonly { type: string }[]): string[] {
    return effects.map((e) => e.type);
  }
});

describe('the default port', () => {
  const DEFAULT = 'http://127.0.0.1:4000';
  const watching = (secrets: string[] = []) => started(config(undefined, secrets, DEFAULT));

  it('may be served when nobody was seen on it', () => {
    expect(mayServeDefaultPort(watching())).toBe(true);
  });

  it('is never served by a node that has none (no discovery range)', () => {
    expect(mayServeDefaultPort(started())).toBe(false);
  });

  it('may be served after a member held it, also once that member is gone', () => {
    const held = step(watching(), metaEvent(meta('127.0.0.1:4000'), DEFAULT), NOW).state;
    expect(held.defaultHolder).toBe('127.0.0.1:4000');
    expect(mayServeDefaultPort(held)).toBe(true);
    expect(mayServeDefaultPort(step(held, { type: 'gone', id: '127.0.0.1:4000' }, NOW).state)).toBe(true);
  });

  it("is left alone after another cluster's server (or another user's) held it, even once it is free", () => {
    const foreign = step(watching(['s3cret']), metaEvent(meta('127.0.0.1:4000'), DEFAULT), NOW).state;
    expect(foreign.members.size).toBe(0);
    expect(mayServeDefaultPort(foreign)).toBe(false);
    const otherCluster = step(watching(), metaEvent(meta('127.0.0.1:4000', { id: 'theirs' }), DEFAULT), NOW).state;
    expect(mayServeDefaultPort(otherCluster)).toBe(false);
  });

  it('a member serving it as its second port is recognised, quietly, and this node itself too', () => {
    const member = step(watching(), metaEvent(meta()), NOW).state;
    const alias = step(member, metaEvent(meta(), DEFAULT), NOW);
    expect(alias.effects).toEqual([]);
    expect(alias.state.defaultHolder).toBe(PEER);
    expect(mayServeDefaultPort(alias.state)).toBe(true);
    const self = step(watching(), metaEvent(meta(SELF), DEFAULT), NOW);
    expect(self.effects).toEqual([]);
    expect(mayServeDefaultPort(self.state)).toBe(true);
  });
});

describe('views', () => {
  const withMember = (): AdmissionState => step(started(), metaEvent(meta()), NOW).state;

  it("knows its own and its members' addresses, in any spelling of loopback, and nothing else", () => {
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

  it('server ids of the cluster: this one, members, and members gone, but not observers or strangers', () => {
    const state = withMember();
    const observed = step(state, { type: 'hello', hello: hello('127.0.0.1:5003') }, NOW).state;
    expect(isClusterServerId(observed, SELF)).toBe(true);
    expect(isClusterServerId(observed, PEER)).toBe(true);
    expect(isClusterServerId(observed, '127.0.0.1:5003')).toBe(false);
    expect(isClusterServerId(observed, 'stranger')).toBe(false);
    expect(isClusterServerId(step(observed, { type: 'gone', id: PEER }, NOW).state, PEER)).toBe(true);
  });

  it('all linked: every member with a known endpoint has a link up, and nobody awaits proof', () => {
    expect(allLinked(started(), () => false)).toBe(true);
    const state = withMember();
    expect(allLinked(state, () => false)).toBe(false);
    expect(allLinked(state, (id) => id === PEER)).toBe(true);
    // A static member not yet seen anywhere has no endpoint: nothing to wait for.
    expect(allLinked(started(config({ mode: 'static', members: [SELF, PEER] })), () => false)).toBe(true);
    const awaiting = step(started(config(undefined, ['s3cret'])), metaEvent(meta()), NOW).state;
    expect(allLinked(awaiting, () => true)).toBe(false);
  });

  it('members to probe for departure: unlinked, with a metadata address on the given host', () => {
    const state = withMember();
    expect(unlinkedOnHost(state, () => false, '127.0.0.1').map((e) => e.id)).toEqual([PEER]);
    expect(unlinkedOnHost(state, () => false, 'localhost').map((e) => e.id)).toEqual([PEER]);
    expect(unlinkedOnHost(state, () => true, '127.0.0.1')).toEqual([]);
    expect(unlinkedOnHost(state, () => false, '10.0.0.5')).toEqual([]);
    // Known only from its hello (no metadata address), or an observer: not probed.
    const observed = step(started(), { type: 'hello', hello: hello() }, NOW).state;
    expect(unlinkedOnHost(observed, () => false, '127.0.0.1')).toEqual([]);
  });

  it('with static membership every round is clean: the list is the whole truth', () => {
    const state = started(config({ mode: 'static', members: [SELF, PEER] }));
    expect(roundView(state, 1, ['http://127.0.0.1:5002'], false).clean).toBe(true);
  });
});
