import { describe, expect, it } from 'vitest';
import { parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import type { ProbeResult } from '@mdp/cluster';
import { EXIT, check, exitCodeOf, formatJson, formatText, problemsOf, type ProbeReport } from '../src/index.js';
import { metaDocument } from './fixtures.js';

function meta(port: number, cluster: Record<string, unknown> = {}, ranges?: string[]): MetaDocument {
  const doc = metaDocument(port, cluster);
  if (ranges) doc.supportedProtocolRanges = ranges;
  const parsed = parseMetaDocument(doc);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

const found = (port: number, doc = meta(port)): ProbeResult => ({ ok: true, url: `http://127.0.0.1:${port}`, meta: doc });
const notMdp = (port: number, reason: string): ProbeResult => ({ ok: false, url: `http://127.0.0.1:${port}`, kind: 'not-mdp', reason });
const closed = (port: number): ProbeResult => ({ ok: false, url: `http://127.0.0.1:${port}`, kind: 'unreachable', reason: 'connection refused' });

describe('problemsOf', () => {
  it('accepts a version that satisfies one of the ranges', () => {
    expect(problemsOf(meta(1, {}, ['^1.0.0', '^2.0.0']), { requireVersion: '2.4.1' })).toEqual([]);
    expect(problemsOf(meta(1, {}, ['2.0.0']), { requireVersion: '2.0.0' })).toEqual([]);
  });

  it('refuses a version no range accepts, naming the ranges', () => {
    expect(problemsOf(meta(1, {}, ['^3.0.0']), { requireVersion: '2.0.0' })).toEqual(['protocol 2.0.0 is not accepted (server accepts ^3.0.0)']);
    expect(problemsOf(meta(1, {}, []), { requireVersion: '2.0.0' })).toEqual(['protocol 2.0.0 is not accepted (server accepts no version)']);
  });

  it('treats a range the server got wrong as not accepting', () => {
    expect(problemsOf(meta(1, {}, ['not a range']), { requireVersion: '2.0.0' })).toHaveLength(1);
  });

  it('checks the cluster id', () => {
    expect(problemsOf(meta(1, { id: 'prod' }), { clusterId: 'prod' })).toEqual([]);
    expect(problemsOf(meta(1, { id: 'dev' }), { clusterId: 'prod' })).toEqual(['cluster is "dev", not "prod"']);
  });

  it('demands nothing without requirements', () => {
    expect(problemsOf(meta(1, { id: 'x' }, []), {})).toEqual([]);
  });
});

describe('exitCodeOf', () => {
  const none = {};
  it('is 1 when nothing MDP answered', () => {
    expect(exitCodeOf([])).toBe(EXIT.nothing);
    expect(exitCodeOf([closed(1), notMdp(2, 'HTTP 404 Not Found')].map((r) => check(r, none)))).toBe(1);
  });

  it('is 0 when an MDP server answered, whatever else failed', () => {
    expect(exitCodeOf([closed(1), found(2)].map((r) => check(r, none)))).toBe(EXIT.found);
  });

  it('is 2 when any MDP server fails the requirements', () => {
    const requirements = { clusterId: 'default' };
    expect(exitCodeOf([found(1), found(2, meta(2, { id: 'other' }))].map((r) => check(r, requirements)))).toBe(EXIT.incompatible);
  });

  it('uses 64 for usage errors', () => {
    expect(EXIT.usage).toBe(64);
  });
});

describe('formatText', () => {
  it('summarises every field an operator asks about', () => {
    const doc = meta(7, {
      id: 'prod',
      membershipMode: 'static',
      membershipFingerprint: '["127.0.0.1:7","127.0.0.1:8","127.0.0.1:9"]',
      role: 'follower',
      term: 12,
      leaderId: '127.0.0.1:8',
      leaderUrl: 'ws://127.0.0.1:8',
      leaseDurationMs: 4000,
      knownMemberCount: 3,
      reachableMemberCount: 1,
      quorumSize: 2,
      hasQuorum: false,
    });
    const report: ProbeReport = { targets: [check(found(7, doc), {})], scans: [], exitCode: 0 };
    expect(formatText(report)).toBe(
      [
        'http://127.0.0.1:7  MDP server, protocol mdp 2.0.0',
        '  accepts       ^2.0.0',
        '  server id     127.0.0.1:7',
        '  endpoints     ws        ws://127.0.0.1:7',
        '                httpLoop  http://127.0.0.1:7/mdp/http-loop',
        '                auth      http://127.0.0.1:7/mdp/auth',
        '                meta      http://127.0.0.1:7/mdp/meta',
        '                cluster   ws://127.0.0.1:7/mdp/cluster',
        '  features      upstreamProxy yes, clusterControl yes',
        '  cluster       prod',
        '  membership    static, fingerprint ["127.0.0.1:7","127.0.0.1:8","127.0.0.1:9"]',
        '  role          follower, term 12',
        '  leader        127.0.0.1:8 at ws://127.0.0.1:8',
        '  lease         4000 ms',
        '  members       3 known, 1 reachable',
        '  quorum        2, NOT held',
        '',
      ].join('\n'),
    );
  });

  it('reports failures on one line each and marks requirement problems', () => {
    const report: ProbeReport = {
      targets: [check(notMdp(1, 'HTTP 404 Not Found'), {}), check(closed(2), {}), check(found(3), { clusterId: 'prod' })],
      scans: [],
      exitCode: 2,
    };
    const text = formatText(report);
    expect(text).toContain('http://127.0.0.1:1  not MDP: HTTP 404 Not Found\n');
    expect(text).toContain('http://127.0.0.1:2  unreachable: connection refused\n');
    expect(text).toContain('  INCOMPATIBLE  cluster is "default", not "prod"\n');
  });

  it('lists answering ports of a scan and counts the rest', () => {
    const report: ProbeReport = {
      targets: [],
      scans: [{ spec: { host: '127.0.0.1', from: 1, to: 4 }, results: [closed(1), found(2), notMdp(3, 'x'), closed(4)].map((r) => check(r, {})) }],
      exitCode: 0,
    };
    const text = formatText(report);
    expect(text).not.toContain('unreachable:');
    expect(text).toContain('http://127.0.0.1:2  MDP server');
    expect(text).toContain('http://127.0.0.1:3  not MDP: x');
    expect(text).toContain('scan 127.0.0.1:1-4: 4 ports, 1 MDP, 1 not MDP, 2 unreachable\n');
  });

  it('escapes control characters a server sends', () => {
    const doc = meta(5);
    doc.serverId = 'evil\u001b[2Jid';
    const text = formatText({ targets: [check(found(5, doc), {})], scans: [], exitCode: 0 });
    expect(text).toContain('evil\\u001b[2Jid');
    expect(text).not.toContain('\u001b');
    expect(formatText({ targets: [check(notMdp(6, 'bad\rreason'), {})], scans: [], exitCode: 1 })).toContain('bad\\u000dreason');
  });
});

describe('formatJson', () => {
  it('prints the validated documents, the failures and scan counts', () => {
    const report: ProbeReport = {
      targets: [check(found(1), { requireVersion: '3.0.0' }), check(closed(2), {})],
      scans: [{ spec: { host: '127.0.0.1', from: 3, to: 5 }, results: [found(3), notMdp(4, 'HTTP 500'), closed(5)].map((r) => check(r, {})) }],
      exitCode: 2,
    };
    const json = JSON.parse(formatJson(report));
    expect(json).toEqual({
      exitCode: 2,
      servers: [
        { url: 'http://127.0.0.1:1', compatible: false, problems: ['protocol 3.0.0 is not accepted (server accepts ^2.0.0)'], meta: meta(1) },
        { url: 'http://127.0.0.1:3', compatible: true, problems: [], meta: meta(3) },
      ],
      failures: [
        { url: 'http://127.0.0.1:2', kind: 'unreachable', reason: 'connection refused' },
        { url: 'http://127.0.0.1:4', kind: 'not-mdp', reason: 'HTTP 500' },
      ],
      scans: [{ host: '127.0.0.1', from: 3, to: 5, ports: 3, mdp: 1, notMdp: 1, unreachable: 1 }],
    });
    for (const server of json.servers) expect(parseMetaDocument(server.meta).ok).toBe(true);
  });
});
