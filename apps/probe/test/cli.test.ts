/**
 * The built `mdp-probe` (dist/cli.js) run as a child process against real servers on 127.0.0.1.
 * Build first: `npx turbo run build --filter=@mdp/probe...` (the root `pnpm test` does).
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetaDocument, type MetaDocument } from '@mdp/protocol';
import { closedPort } from '@mdp/test-kit';
import { SERVER_CLI, answer, mdp, metaDocument, probe, serve, serveConsecutive, startMdpServer, stopAll, type Handler } from './fixtures.js';

afterEach(stopAll);

const url = (port: number): string => `http://127.0.0.1:${port}`;
const html = (): Handler => answer(200, '<!doctype html><html><body>Welcome</body></html>', 'text/html; charset=utf-8');
const notFound = (): Handler => answer(404, 'Not Found', 'text/plain');
const badJson = (): Handler => answer(200, '{"protocol": "mdp", ');
const v3Only = mdp((doc) => {
  doc.supportedProtocolRanges = ['^3.0.0'];
  doc.protocolVersion = '3.0.0';
});

describe('mdp-probe: MDP servers', () => {
  it('summarises a standalone MDP server and exits 0', async () => {
    const port = await serve(mdp());
    const { code, stdout, stderr } = await probe(String(port));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`${url(port)}  MDP server, protocol mdp 2.0.0\n`);
    for (const expected of [
      '  accepts       ^2.0.0',
      `  server id     127.0.0.1:${port}`,
      `  endpoints     ws        ws://127.0.0.1:${port}`,
      `                httpLoop  ${url(port)}/mdp/http-loop`,
      `                cluster   ws://127.0.0.1:${port}/mdp/cluster`,
      '  features      upstreamProxy yes, clusterControl yes',
      '  cluster       default',
      '  membership    dynamic, fingerprint dynamic',
      '  role          leader, term 0',
      `  leader        127.0.0.1:${port} at ws://127.0.0.1:${port}`,
      '  lease         4000 ms',
      '  members       1 known, 1 reachable',
      '  quorum        1, held',
    ]) {
      expect(stdout).toContain(`${expected}\n`);
    }
  });

  it('reports the leader and a follower of one cluster, each as it sees itself', async () => {
    const leader = await serve(
      mdp((doc) => Object.assign(doc.cluster as object, { id: 'prod', term: 7, knownMemberCount: 2, reachableMemberCount: 2, quorumSize: 2 })),
    );
    const follower = await serve(
      mdp((doc) =>
        Object.assign(doc.cluster as object, {
          id: 'prod',
          role: 'follower',
          term: 7,
          leaderId: `127.0.0.1:${leader}`,
          leaderUrl: `ws://127.0.0.1:${leader}`,
          knownMemberCount: 2,
          reachableMemberCount: 2,
          quorumSize: 2,
        }),
      ),
    );
    const { code, stdout } = await probe(String(leader), `127.0.0.1:${follower}`, '--cluster-id', 'prod');
    expect(code).toBe(0);
    const [leaderBlock, followerBlock] = stdout.split('\n\n');
    expect(leaderBlock).toContain(`${url(leader)}  MDP server`);
    expect(leaderBlock).toContain('  role          leader, term 7\n');
    expect(leaderBlock).toContain(`  leader        127.0.0.1:${leader} at ws://127.0.0.1:${leader}\n`);
    expect(followerBlock).toContain(`${url(follower)}  MDP server`);
    expect(followerBlock).toContain('  role          follower, term 7\n');
    expect(followerBlock).toContain(`  leader        127.0.0.1:${leader} at ws://127.0.0.1:${leader}\n`);
    expect(followerBlock).toContain('  quorum        2, held\n');
  });

  it('exits 2 when the server does not accept --require-version', async () => {
    const port = await serve(v3Only);
    const refused = await probe(String(port), '--require-version', '2.0.0');
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain('  accepts       ^3.0.0\n');
    expect(refused.stdout).toContain('  INCOMPATIBLE  protocol 2.0.0 is not accepted (server accepts ^3.0.0)\n');

    expect((await probe(String(port), '--require-version', '3.1.0')).code).toBe(0);
    expect((await probe(String(port))).code).toBe(0);
  });

  it('exits 2 for a server of another cluster', async () => {
    const port = await serve(mdp((doc) => Object.assign(doc.cluster as object, { id: 'staging' })));
    const { code, stdout } = await probe(String(port), '--cluster-id', 'prod');
    expect(code).toBe(2);
    expect(stdout).toContain('  INCOMPATIBLE  cluster is "staging", not "prod"\n');
  });

  it('exits 0 when one target is MDP and another is closed', async () => {
    const [port, closed] = [await serve(mdp()), await closedPort()];
    const { code, stdout } = await probe(String(closed), String(port));
    expect(code).toBe(0);
    expect(stdout).toContain(`${url(closed)}  unreachable: connection refused\n`);
  });

  it('exits 2 when any MDP server fails the requirements, even if another meets them', async () => {
    const [good, other] = [await serve(mdp()), await serve(mdp((doc) => Object.assign(doc.cluster as object, { id: 'x' })))];
    expect((await probe(String(good), String(other), '--cluster-id', 'default')).code).toBe(2);
  });
});

describe('mdp-probe: nothing MDP', () => {
  it.each([
    ['an HTML page', html, 'not MDP: answered an HTML page (text/html; charset=utf-8), not JSON'],
    ['a 404', notFound, 'not MDP: HTTP 404 Not Found'],
    ['invalid JSON', badJson, 'not MDP: invalid JSON (application/json): '],
    [
      'a document failing the schema',
      mdp((doc) => Object.assign(doc.cluster as object, { role: 'primary' })),
      'not MDP: not an MDP metadata document: cluster.role: ',
    ],
  ])('reports %s as not MDP and exits 1', async (_name, handler, expected) => {
    const port = await serve(handler);
    const { code, stdout, stderr } = await probe(String(port));
    expect(stderr).toBe('');
    expect(code).toBe(1);
    expect(stdout).toContain(`${url(port)}  ${expected}`);
  });

  it('reports a closed port as unreachable and exits 1', async () => {
    const port = await closedPort();
    const { code, stdout } = await probe(`127.0.0.1:${port}`);
    expect(code).toBe(1);
    expect(stdout).toBe(`${url(port)}  unreachable: connection refused\n`);
  });

  it('gives up on a silent server after --timeout', async () => {
    const port = await serve(() => () => undefined);
    const { code, stdout } = await probe(String(port), '--timeout', '200');
    expect(code).toBe(1);
    expect(stdout).toBe(`${url(port)}  unreachable: no answer within 200 ms\n`);
  });

  it('probes 127.0.0.1:47372 when given no target', async () => {
    const { code, stdout } = await probe();
    expect([0, 1, 2]).toContain(code);
    expect(stdout.startsWith('http://127.0.0.1:47372  ')).toBe(true);
  });
});

describe('mdp-probe --json', () => {
  it('prints the validated documents and the failures', async () => {
    const [leader, old, page, closed] = [await serve(mdp()), await serve(v3Only), await serve(html), await closedPort()];
    const { code, stdout } = await probe('--json', '--require-version', '2.0.0', String(leader), String(old), String(page), String(closed));
    expect(code).toBe(2);
    const json = JSON.parse(stdout) as {
      exitCode: number;
      servers: Array<{ url: string; compatible: boolean; problems: string[]; meta: unknown }>;
      failures: Array<{ url: string; kind: string; reason: string }>;
      scans: unknown[];
    };
    expect(json.exitCode).toBe(2);
    expect(json.servers.map((s) => [s.url, s.compatible])).toEqual([
      [url(leader), true],
      [url(old), false],
    ]);
    for (const server of json.servers) {
      const parsed = parseMetaDocument(server.meta);
      expect(parsed.ok).toBe(true);
    }
    expect(json.servers[0]?.meta).toEqual(metaDocument(leader));
    expect(json.failures).toEqual([
      { url: url(page), kind: 'not-mdp', reason: 'answered an HTML page (text/html; charset=utf-8), not JSON' },
      { url: url(closed), kind: 'unreachable', reason: 'connection refused' },
    ]);
    expect(json.scans).toEqual([]);
  });

  it('exits 1 with JSON when nothing MDP answered', async () => {
    const port = await serve(notFound);
    const { code, stdout } = await probe(String(port), '--json');
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toEqual({
      exitCode: 1,
      servers: [],
      failures: [{ url: url(port), kind: 'not-mdp', reason: 'HTTP 404 Not Found' }],
      scans: [],
    });
  });
});

describe('mdp-probe --scan', () => {
  it('probes a range concurrently, lists what answered and counts the rest', async () => {
    // Ports p (MDP), p+1 (HTML), p+2 (404), p+3 (MDP follower).
    const first = await serveConsecutive([mdp(), html, notFound, mdp((doc) => Object.assign(doc.cluster as object, { role: 'follower', term: 3 }))]);
    const range = `127.0.0.1:${first}-${first + 3}`;
    const text = await probe('--scan', range);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${url(first)}  MDP server`);
    expect(text.stdout).toContain(`${url(first + 1)}  not MDP: answered an HTML page`);
    expect(text.stdout).toContain(`${url(first + 2)}  not MDP: HTTP 404 Not Found`);
    expect(text.stdout).toContain(`${url(first + 3)}  MDP server`);
    expect(text.stdout).toContain('  role          follower, term 3\n');
    expect(text.stdout).toContain(`scan ${range}: 4 ports, 2 MDP, 2 not MDP, 0 unreachable\n`);

    const json = await probe('--json', `--scan=${first}-${first + 3}`);
    expect(JSON.parse(json.stdout)).toMatchObject({
      exitCode: 0,
      servers: [{ url: url(first) }, { url: url(first + 3) }],
      scans: [{ host: '127.0.0.1', from: first, to: first + 3, ports: 4, mdp: 2, notMdp: 2, unreachable: 0 }],
    });
  });

  it('exits 1 when no port of the range serves MDP', async () => {
    const first = await serveConsecutive([html, notFound]);
    const { code, stdout } = await probe('--scan', `${first}-${first + 1}`);
    expect(code).toBe(1);
    expect(stdout).toContain(`: 2 ports, 0 MDP, 2 not MDP, 0 unreachable\n`);
  });

  it('exits 2 when a scanned server is of another cluster', async () => {
    const first = await serveConsecutive([mdp((doc) => Object.assign(doc.cluster as object, { id: 'other' }))]);
    expect((await probe('--scan', `${first}-${first}`, '--cluster-id', 'default')).code).toBe(2);
  });

  it('scans the default 100 ports (how fast is a `pnpm bench` figure)', async () => {
    const { code, stdout } = await probe('--scan');
    // Another MDP server may be listening in the default range on this machine; nothing else is asked.
    expect([0, 1]).toContain(code);
    expect(stdout).toMatch(/^scan 127\.0\.0\.1:47372-47471: 100 ports, /m);
  });
});

describe('mdp-probe: usage', () => {
  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['0'], "bad port '0'"],
    [['99999'], "bad port '99999'"],
    [['localhost:abc'], "bad port 'abc'"],
    [['--scan', '200-100'], "bad range '200-100'"],
    [['--scan=127.0.0.1:1-99999'], 'bad port 99999'],
    [['--require-version', 'two'], "'two' is not a semver version"],
    [['--timeout', 'x'], "--timeout: 'x'"],
    [['--timeout'], 'argument missing'],
  ])('exits 64 for %j', async (args, message) => {
    const { code, stdout, stderr } = await probe(...args);
    expect(code).toBe(64);
    expect(stdout).toBe('');
    expect(stderr).toContain(`mdp-probe: `);
    expect(stderr).toContain(message);
    expect(stderr).toContain("Try 'mdp-probe --help'.");
  });

  it.each(['--version', '-v'])('%s prints the version of the package and exits 0', async (flag) => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    const { code, stdout, stderr } = await probe(flag);
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: `mdp-probe ${version}\n`, stderr: '' });
  });

  it('prints the help and exits 0', async () => {
    const { code, stdout } = await probe('--help');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: mdp-probe \[options\] \[URL \| PORT \| HOST:PORT\]\.\.\./);
    expect(stdout).toContain('Exit status:');
  });
});

describe.skipIf(!existsSync(SERVER_CLI))('mdp-probe against a real mdp-server', () => {
  it('finds a standalone server, the leader of its own cluster of one', async () => {
    // mdp-server defaults to --cluster-mode auto; standalone is the leader of one from the start.
    const base = (await startMdpServer(['--cluster-mode', 'standalone'])).url;
    const port = Number(new URL(base).port);
    const { code, stdout } = await probe(base, '--require-version', '2.0.0');
    expect(code).toBe(0);
    expect(stdout).toContain(`${base}  MDP server, protocol mdp 2.0.0\n`);
    expect(stdout).toContain(`  server id     127.0.0.1:${port}\n`);
    expect(stdout).toContain('  role          leader, term 0\n');
    expect(stdout).toContain('  members       1 known, 1 reachable\n');
    expect(stdout).toContain('  quorum        1, held\n');

    const json = JSON.parse((await probe('--json', String(port))).stdout) as { servers: Array<{ meta: unknown }> };
    expect(json.servers).toHaveLength(1);
    expect(parseMetaDocument(json.servers[0]?.meta).ok).toBe(true);

    expect((await probe(String(port), '--require-version', '3.0.0')).code).toBe(2);
    expect((await probe(String(port), '--cluster-id', 'surely-not-this-one')).code).toBe(2);
  });
});

describe.skipIf(!existsSync(SERVER_CLI))('mdp-probe against a real two-server cluster', () => {
  async function metaOf(base: string): Promise<MetaDocument> {
    const doc = parseMetaDocument(await (await fetch(`${base}/mdp/meta`)).json());
    if (!doc.ok) throw new Error(doc.error);
    return doc.value;
  }

  it('reports the leader and the follower of a real auto-mode cluster', async () => {
    const fast = [
      '--cluster-heartbeat-interval-ms',
      '100',
      '--lease-duration-ms',
      '800',
      '--election-timeout-min-ms',
      '300',
      '--election-timeout-max-ms',
      '600',
      '--discover-interval-ms',
      '200',
      '--cluster-state-dir',
      'none',
      '--cluster-id',
      'probe-test',
    ];
    const nobody = await closedPort();
    const leader = await startMdpServer(['--cluster-mode', 'auto', '--discover-start-port', String(nobody), '--discover-attempts', '1', ...fast]);
    await leader.printed(/: this node is the leader \(term \d+\)/);
    const leaderBase = leader.url;
    const leaderMeta = await metaOf(leaderBase);
    expect(leaderMeta.cluster.role).toBe('leader');
    const follower = await startMdpServer(['--cluster-mode', 'auto', '--discover-start-port', new URL(leaderBase).port, '--discover-attempts', '1', ...fast]);
    await follower.printed(new RegExp(`: following ${leaderMeta.serverId.replace(/[.]/g, '\\.')} `));
    const followerBase = follower.url;

    const { code, stdout } = await probe(leaderBase, followerBase, '--cluster-id', 'probe-test');
    expect(code).toBe(0);
    const [leaderPart, followerPart] = stdout.split(`${followerBase}  MDP server`);
    expect(leaderPart).toContain(`role          leader, term ${leaderMeta.cluster.term}`);
    expect(followerPart).toMatch(/role {10}follower, term \d+/);
    expect(followerPart).toContain(leaderMeta.serverId);

    const json = JSON.parse((await probe('--json', leaderBase, followerBase)).stdout) as { servers: Array<{ meta: MetaDocument }> };
    expect(json.servers.map((s) => s.meta.cluster.role).sort()).toEqual(['follower', 'leader']);
    for (const server of json.servers) expect(parseMetaDocument(server.meta).ok).toBe(true);
  });
});
