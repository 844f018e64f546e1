import { describe, expect, it } from 'vitest';
import {
  CLUSTER_ROLES,
  MEMBERSHIP_MODES,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_RANGES,
  buildMetaDocument,
  metaEndpoints,
  parseMetaDocument,
  standaloneClusterView,
} from '../src/index.js';
import { metaDocument } from './fixtures.js';

/** Every dotted field path of a nested object, leaves and branches alike. */
function fieldPaths(value: Record<string, unknown>, prefix = ''): string[] {
  const paths: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${key}` : key;
    paths.push(path);
    if (typeof child === 'object' && child !== null && !Array.isArray(child)) {
      paths.push(...fieldPaths(child as Record<string, unknown>, path));
    }
  }
  return paths;
}

/** Copy of the valid document with the field at `path` replaced (or removed when `value` is omitted). */
function withField(path: string, ...value: [unknown] | []): Record<string, unknown> {
  const doc = metaDocument();
  const keys = path.split('.');
  const last = keys.pop() as string;
  let target = doc;
  for (const key of keys) target = target[key] as Record<string, unknown>;
  if (value.length === 0) delete target[last];
  else target[last] = value[0];
  return doc;
}

describe('version constants', () => {
  it('names protocol mdp 2.0.0 accepting ^2.0.0', () => {
    expect(PROTOCOL_NAME).toBe('mdp');
    expect(PROTOCOL_VERSION).toBe('2.0.0');
    expect(SUPPORTED_PROTOCOL_RANGES).toEqual(['^2.0.0']);
  });

  it('cannot be changed at run time', () => {
    expect(Object.isFrozen(SUPPORTED_PROTOCOL_RANGES)).toBe(true);
    expect(() => (SUPPORTED_PROTOCOL_RANGES as string[]).push('^3.0.0')).toThrow();
  });
});

describe('meta document: valid', () => {
  it('accepts the document a standalone server reports', () => {
    const doc = metaDocument();
    expect(parseMetaDocument(doc)).toEqual({ ok: true, value: doc });
  });

  it.each(CLUSTER_ROLES)('accepts role %s', (role) => {
    expect(parseMetaDocument(withField('cluster.role', role)).ok).toBe(true);
  });

  it.each(MEMBERSHIP_MODES)('accepts membership mode %s', (mode) => {
    expect(parseMetaDocument(withField('cluster.membershipMode', mode)).ok).toBe(true);
  });

  it('accepts a static three-node follower view', () => {
    const doc = metaDocument();
    Object.assign(doc.cluster as object, {
      membershipMode: 'static',
      membershipFingerprint: '["a:1","b:2","c:3"]',
      role: 'follower',
      term: 12,
      knownMemberCount: 3,
      reachableMemberCount: 2,
      quorumSize: 2,
      hasQuorum: true,
    });
    doc.supportedProtocolRanges = ['^2.0.0', '2.1.0'];
    expect(parseMetaDocument(doc)).toEqual({ ok: true, value: doc });
  });

  it('accepts an empty list of supported ranges', () => {
    expect(parseMetaDocument(withField('supportedProtocolRanges', [])).ok).toBe(true);
  });
});

describe('meta document: invalid', () => {
  // Every field of the document is always present (SPEC §9), so removing any one must be refused.
  it.each(fieldPaths(metaDocument()))('refuses a document without %s, naming it', (path) => {
    const result = parseMetaDocument(withField(path));
    expect(result).toMatchObject({ ok: false, path });
    if (!result.ok) expect(result.error.startsWith(`${path}: `)).toBe(true);
  });

  it.each([
    ['protocol', 'grpc'],
    ['protocol', 'MDP'],
    ['protocolVersion', 2],
    ['supportedProtocolRanges', '^2.0.0'],
    ['supportedProtocolRanges.0', 2],
    ['serverId', ''],
    ['serverId', 47372],
    ['endpoints', 'ws://x'],
    ['endpoints.ws', null],
    ['endpoints.httpLoop', 1],
    ['endpoints.cluster', false],
    ['features', true],
    ['features.upstreamProxy', 'yes'],
    ['features.clusterControl', 1],
    ['cluster', 'leader'],
    ['cluster.id', 7],
    ['cluster.membershipMode', 'auto'],
    ['cluster.membershipFingerprint', ['a']],
    ['cluster.role', 'primary'],
    ['cluster.role', 'Leader'],
    ['cluster.term', -1],
    ['cluster.term', 1.5],
    ['cluster.term', '0'],
    ['cluster.leaderId', null],
    ['cluster.leaderUrl', 5],
    ['cluster.leaseDurationMs', '4000'],
    ['cluster.leaseDurationMs', 4000.5],
    ['cluster.leaseDurationMs', -1],
    ['cluster.knownMemberCount', -1],
    ['cluster.reachableMemberCount', 0.5],
    ['cluster.quorumSize', '1'],
    ['cluster.hasQuorum', 'true'],
  ])('refuses %s = %j', (path, value) => {
    const doc = path === 'supportedProtocolRanges.0' ? withField('supportedProtocolRanges', [value]) : withField(path, value);
    const result = parseMetaDocument(doc);
    expect(result).toMatchObject({ ok: false, path });
  });

  it.each([null, 'mdp', [], 1])('refuses non-object %j', (input) => {
    expect(parseMetaDocument(input).ok).toBe(false);
  });
});

describe('metadata builders', () => {
  it('build a standalone document that the schema accepts', () => {
    const endpoints = metaEndpoints('127.0.0.1:47372');
    expect(endpoints).toEqual({
      ws: 'ws://127.0.0.1:47372',
      httpLoop: 'http://127.0.0.1:47372/mdp/http-loop',
      auth: 'http://127.0.0.1:47372/mdp/auth',
      meta: 'http://127.0.0.1:47372/mdp/meta',
      cluster: 'ws://127.0.0.1:47372/mdp/cluster',
    });
    const doc = buildMetaDocument('127.0.0.1:47372', endpoints, standaloneClusterView('mdp', '127.0.0.1:47372', endpoints.ws, 4000), {
      upstreamProxy: false,
      clusterControl: false,
    });
    expect(parseMetaDocument(doc)).toEqual({ ok: true, value: doc });
    expect(doc.cluster).toMatchObject({ role: 'leader', term: 0, leaderId: '127.0.0.1:47372', knownMemberCount: 1, quorumSize: 1, hasQuorum: true });
    expect(doc.supportedProtocolRanges).toEqual(['^2.0.0']);
  });

  it('give https and wss URLs for a server on TLS', () => {
    expect(metaEndpoints('[::1]:8443', true)).toEqual({
      ws: 'wss://[::1]:8443',
      httpLoop: 'https://[::1]:8443/mdp/http-loop',
      auth: 'https://[::1]:8443/mdp/auth',
      meta: 'https://[::1]:8443/mdp/meta',
      cluster: 'wss://[::1]:8443/mdp/cluster',
    });
  });
});
