/**
 * Operating it (SPEC §15, issue 22), on real servers: /metrics parsed with a Prometheus text parser
 * while clients register and skills are read, the metrics token, /healthz and /readyz (503 until a
 * cluster node knows a leader), `GET /`, and the client, access and audit log lines.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import parsePrometheusTextFormat, { type PromFamily, type PromSample } from 'parse-prometheus-text-format';
import { ClientFailure, descriptor, freePorts, recordingLogger, skill, stopAll } from '@mdp/test-kit';
import { createMdpServer, type MdpServer } from '../src/index.js';
import { clientChange, registeredClient, registeredLoopClient, startServer, type TestServer } from './harness.js';

afterEach(stopAll);

type Scrape = Map<string, PromFamily> & { readonly text: string };

/** GET /metrics, parsed (the parser throws on any line that is not valid exposition text). */
async function scrape(t: TestServer): Promise<Scrape> {
  const res = await fetch(`${t.http}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const text = await res.text();
  return Object.assign(new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family])), { text });
}

/**
 * One sample line of a labelled histogram, read from the text. The parser validates every line but
 * folds a histogram's label groups into one (prom2json's shape), so per-route series are read here.
 */
function histogramSample(scraped: Scrape, line: string): number {
  const found = scraped.text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return Number(found?.slice(line.length + 1) ?? Number.NaN);
}

/** The sample of `family` whose labels include `labels`. */
function sample(families: Map<string, PromFamily>, family: string, labels: Record<string, string> = {}): PromSample | undefined {
  return families.get(family)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

const value = (families: Map<string, PromFamily>, family: string, labels: Record<string, string> = {}): number =>
  Number(sample(families, family, labels)?.value ?? Number.NaN);

describe('/metrics', () => {
  it('parses as Prometheus text; gauges and counters follow clients registering, reads and calls', async () => {
    const t = await startServer();
    const empty = await scrape(t);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(empty.has(name), name).toBe(true);
    }
    expect(empty.get('mdp_invocations_total')?.type).toBe('COUNTER');
    expect(empty.get('mdp_invocation_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(sample(empty, 'mdp_clients')).toBeUndefined();
    expect(value(empty, 'mdp_paths', { type: 'skill' })).toBe(0);
    expect(value(empty, 'mdp_cluster_role', { role: 'leader' })).toBe(1);
    expect(value(empty, 'mdp_cluster_term')).toBe(0);
    expect(value(empty, 'mdp_cluster_leader_known')).toBe(1);

    const ws = await registeredClient(
      t,
      descriptor('alpha', [skill('/a/skill.md'), skill('/b/skill.md'), { type: 'endpoint', method: 'POST', path: '/echo' }]),
    );
    ws.handler = (call) =>
      call.path === '/b/skill.md' ? new ClientFailure({ code: 'handler_error', message: 'no b' }) : call.path === '/echo' ? call.body : '# A';
    const loop = await registeredLoopClient(t, descriptor('beta', [skill('/c/skill.md')]));
    loop.handler = () => '# C';

    expect((await fetch(`${t.http}/skills/alpha/a`)).status).toBe(200);
    expect((await fetch(`${t.http}/skills/alpha/a`)).status).toBe(200);
    expect((await fetch(`${t.http}/skills/alpha/b`)).status).toBe(502);
    expect((await fetch(`${t.http}/skills/beta/c`)).status).toBe(200);
    const call = await fetch(`${t.http}/mdp/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'alpha', method: 'POST', path: '/echo', body: { n: 1 } }),
    });
    expect(await call.json()).toEqual({ ok: true, data: { n: 1 } });

    const after = await scrape(t);
    expect(value(after, 'mdp_clients', { transport: 'ws' })).toBe(1);
    expect(value(after, 'mdp_clients', { transport: 'http-loop' })).toBe(1);
    expect(value(after, 'mdp_sessions', { transport: 'ws' })).toBe(1);
    expect(value(after, 'mdp_sessions', { transport: 'http-loop' })).toBe(1);
    expect(value(after, 'mdp_paths', { type: 'skill' })).toBe(3);
    expect(value(after, 'mdp_paths', { type: 'endpoint' })).toBe(1);
    expect(value(after, 'mdp_invocations_total', { route: 'skill', outcome: 'ok' })).toBe(3);
    expect(value(after, 'mdp_invocations_total', { route: 'skill', outcome: 'handler_error' })).toBe(1);
    expect(value(after, 'mdp_invocations_total', { route: 'host', outcome: 'ok' })).toBe(1);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_count{route="skill"}')).toBe(4);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_bucket{route="skill",le="+Inf"}')).toBe(4);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_bucket{route="skill",le="30"}')).toBe(4);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_sum{route="skill"}')).toBeGreaterThan(0);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_count{route="host"}')).toBe(1);
    expect(histogramSample(after, 'mdp_invocation_duration_seconds_count{route="mcp"}')).toBe(0);
    expect(value(after, 'mdp_http_loop_queued_messages')).toBe(0);
    expect(value(after, 'mdp_bytes_received_total')).toBeGreaterThan(value(empty, 'mdp_bytes_received_total'));
    expect(value(after, 'mdp_bytes_sent_total')).toBeGreaterThan(value(empty, 'mdp_bytes_sent_total'));

    const gone = clientChange(t.server, 'alpha', false);
    await ws.close();
    await gone;
    const last = await scrape(t);
    expect(sample(last, 'mdp_clients', { transport: 'ws' })).toBeUndefined();
    expect(value(last, 'mdp_paths', { type: 'skill' })).toBe(1);
    // Counters never go back.
    expect(value(last, 'mdp_invocations_total', { route: 'skill', outcome: 'ok' })).toBe(3);
  });

  it('two servers in one process keep their own counts and share the process metrics', async () => {
    const [a, b] = [await startServer(), await startServer()];
    const client = await registeredClient(a, descriptor('only-a', [skill('/s/skill.md')]));
    client.handler = () => 'x';
    expect((await fetch(`${a.http}/skills/only-a/s`)).status).toBe(200);
    expect(value(await scrape(a), 'mdp_invocations_total', { route: 'skill', outcome: 'ok' })).toBe(1);
    const other = await scrape(b);
    expect(sample(other, 'mdp_invocations_total', { route: 'skill', outcome: 'ok' })).toBeUndefined();
    expect(other.has('process_cpu_user_seconds_total')).toBe(true);
  });
});

describe('/healthz, /readyz, /metrics', () => {
  it('are open without a metrics token; /healthz and a standalone /readyz answer 200', async () => {
    const t = await startServer({ authTokens: ['client-token'] });
    const health = await fetch(`${t.http}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${t.http}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, role: 'leader', term: 0, leaderId: t.server.info?.serverId });
    expect((await fetch(`${t.http}/metrics`)).status).toBe(200);
  });

  it('with a metrics token: 401 without it or with another, 200 with it; the auth tokens do not open them', async () => {
    const t = await startServer({ metricsToken: 'scrape-me', authTokens: ['client-token'] });
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const refused: Array<Record<string, string>> = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: 'Bearer client-token' },
        { authorization: 'scrape-me' },
        { authorization: 'Basic scrape-me' },
      ];
      for (const headers of refused) {
        const res = await fetch(`${t.http}${path}`, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: 'Unauthorized' } });
      }
      expect((await fetch(`${t.http}${path}`, { headers: { authorization: 'Bearer scrape-me' } })).status, path).toBe(200);
    }
  });

  it('refuse other methods (405 with Allow) and query parameters (400 naming one)', async () => {
    const t = await startServer();
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetch(`${t.http}${path}`, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
      const head = await fetch(`${t.http}${path}`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      const query = await fetch(`${t.http}${path}?name=x&y=1`);
      expect(query.status).toBe(400);
      expect(await query.json()).toEqual({ error: { code: 'bad_request', message: `${path} takes no query parameters, got "name"` } });
    }
  });

  it('/readyz is 503 while a cluster node knows no leader, 200 once it has one', async () => {
    const ports = await freePorts(2);
    const members = ports.map((port) => `127.0.0.1:${port}`);
    const servers: MdpServer[] = [];
    const start = async (port: number): Promise<string> => {
      const server = createMdpServer({
        host: '127.0.0.1',
        port,
        logLevel: 'silent',
        cluster: {
          mode: 'auto',
          members,
          heartbeatIntervalMs: 30,
          leaseDurationMs: 300,
          electionTimeoutMinMs: 150,
          electionTimeoutMaxMs: 300,
          discovery: { startPort: ports[0], attempts: 2, intervalMs: 100, probeTimeoutMs: 200 },
        },
      });
      servers.push(server);
      const info = await server.listen();
      return info.urls.http;
    };
    try {
      // One member of two: no quorum, no leader, however long it waits.
      const first = await start(ports[0]!);
      const notReady = await fetch(`${first}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toEqual({ ready: false, reason: 'no cluster leader known' });
      expect((await fetch(`${first}/healthz`)).status).toBe(200);
      const families = new Map(parsePrometheusTextFormat(await (await fetch(`${first}/metrics`)).text()).map((f) => [f.name, f]));
      expect(value(families, 'mdp_cluster_leader_known')).toBe(0);

      const elected = new Promise<void>((resolve) => {
        const off = servers[0]!.cluster!.onLeaderChange((change) => {
          if (change.leaderId) {
            off();
            resolve();
          }
        });
      });
      const second = await start(ports[1]!);
      await elected;
      const ready = await fetch(`${first}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ ready: true, leaderId: expect.stringMatching(/^127\.0\.0\.1:/) });
      const afterElection = new Map(parsePrometheusTextFormat(await (await fetch(`${first}/metrics`)).text()).map((f) => [f.name, f]));
      expect(value(afterElection, 'mdp_cluster_leader_known')).toBe(1);
      expect(value(afterElection, 'mdp_cluster_leader_changes_total')).toBeGreaterThanOrEqual(1);
      expect(value(afterElection, 'mdp_cluster_term')).toBeGreaterThanOrEqual(1);
      expect(second).toMatch(/^http:/);
    } finally {
      for (const server of servers) await server.close();
    }
  }, 15_000);
});

describe('GET /', () => {
  it('answers JSON pointing to the metadata, the inspector and the docs; a page for a browser', async () => {
    const t = await startServer();
    const json = await fetch(`${t.http}/`);
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({
      name: 'mdp-server',
      serverId: t.server.info?.serverId,
      links: { meta: '/mdp/meta', inspector: '/mdp/inspector', docs: expect.stringMatching(/^https:\/\//) },
      skillRoutes: { notFound: expect.stringContaining('MDP-Error-Code') },
    });
    const page = await fetch(`${t.http}/`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('href="/mdp/inspector"');
    expect(html).toContain('href="/mdp/meta"');
    expect(html).toContain('<code>MDP-Error</code>');
    const post = await fetch(`${t.http}/`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });
});

describe('logs', () => {
  it('a client registering, updating its catalog and leaving are info lines with id, transport and path count', async () => {
    const { records: lines, logger } = recordingLogger({ level: 'info' });
    const t = await startServer({ logger });
    const client = await registeredClient(t, descriptor('alpha', [skill('/a/skill.md'), skill('/b/skill.md')]));
    const updated = new Promise<void>((resolve) => {
      const off = t.server.router.onClientEvent((event) => {
        if (event.type === 'updated') {
          off();
          resolve();
        }
      });
    });
    client.send({ type: 'updateClientCatalog', clientId: 'alpha', paths: [skill('/a/skill.md')] });
    await updated;
    const gone = clientChange(t.server, 'alpha', false);
    await client.close();
    await gone;
    const clientLines = lines.filter((line) => String(line.event).startsWith('client.'));
    expect(clientLines.map(({ level, event, clientId, transport, paths }) => ({ level, event, clientId, transport, paths }))).toEqual([
      { level: 'info', event: 'client.join', clientId: 'alpha', transport: 'ws', paths: 2 },
      { level: 'info', event: 'client.update', clientId: 'alpha', transport: 'ws', paths: 1 },
      { level: 'info', event: 'client.leave', clientId: 'alpha', transport: 'ws', paths: 1 },
    ]);
  });

  it('--access-log: one call line per skill read and host call; none without it', async () => {
    for (const accessLog of [true, false]) {
      const { records: lines, logger } = recordingLogger({ level: 'info' });
      const t = await startServer({ logger, accessLog });
      const client = await registeredClient(t, descriptor('alpha', [skill('/a/skill.md')]));
      client.handler = () => '# A';
      await (await fetch(`${t.http}/skills/alpha/a`)).text();
      await (
        await fetch(`${t.http}/mdp/call`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ clientId: 'alpha', method: 'GET', path: '/nope' }),
        })
      ).text();
      const calls = lines.filter((line) => line.event === 'call');
      if (!accessLog) {
        expect(calls).toEqual([]);
        continue;
      }
      expect(calls.map(({ level, route, clientId, method, path, outcome }) => ({ level, route, clientId, method, path, outcome }))).toEqual([
        { level: 'info', route: 'skill', clientId: 'alpha', method: 'GET', path: '/a/skill.md', outcome: 'ok' },
        { level: 'info', route: 'host', clientId: 'alpha', method: 'GET', path: '/nope', outcome: 'not_found' },
      ]);
      expect(typeof calls[0]!.durationMs).toBe('number');
      await stopAll();
    }
  });

  it('--audit-log FILE: one JSON line per call with the caller as scheme and token hash, never the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mdp-audit-'));
    const file = join(dir, 'audit.jsonl');
    try {
      const t = await startServer({ auditLog: file, authTokens: ['reader-secret', 'client-secret'] });
      const client = await registeredClient(t, descriptor('alpha', [skill('/a/skill.md')]), { authorization: 'Bearer client-secret' });
      client.handler = () => '# A';
      expect((await fetch(`${t.http}/skills/alpha/a`, { headers: { authorization: 'Bearer reader-secret' } })).status).toBe(200);
      const host = await fetch(`${t.http}/mdp/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer reader-secret' },
        // The auth forwarded to the client is not who called.
        body: JSON.stringify({ clientId: 'alpha', method: 'GET', path: '/a/skill.md', auth: { token: 'forwarded-secret' } }),
      });
      expect(host.status).toBe(200);
      await t.server.close();
      const text = readFileSync(file, 'utf8');
      for (const secret of ['reader-secret', 'client-secret', 'forwarded-secret']) expect(text).not.toContain(secret);
      const lines = text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const hash = createHash('sha256').update('reader-secret').digest('hex').slice(0, 16);
      expect(lines).toEqual([
        {
          time: expect.any(String),
          caller: { scheme: 'Bearer', tokenHash: hash },
          route: 'skill',
          clientId: 'alpha',
          method: 'GET',
          path: '/a/skill.md',
          outcome: 'ok',
          durationMs: expect.any(Number),
        },
        {
          time: expect.any(String),
          caller: { scheme: 'Bearer', tokenHash: hash },
          route: 'host',
          clientId: 'alpha',
          method: 'GET',
          path: '/a/skill.md',
          outcome: 'ok',
          durationMs: expect.any(Number),
        },
      ]);
      expect(Number.isNaN(Date.parse(lines[0]!.time as string))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--audit-log to a function gets the same lines; an anonymous caller is null', async () => {
    const audit: string[] = [];
    const t = await startServer({ auditLog: (line) => audit.push(line) });
    const client = await registeredClient(t, descriptor('alpha', [skill('/a/skill.md')]));
    client.handler = () => '# A';
    await (await fetch(`${t.http}/skills/alpha/a`)).text();
    expect(audit.map((line) => JSON.parse(line))).toMatchObject([{ caller: null, route: 'skill', outcome: 'ok' }]);
  });

  it('an audit log path that cannot be opened stops the server from starting', async () => {
    const server = createMdpServer({ host: '127.0.0.1', port: 0, logLevel: 'silent', auditLog: join(tmpdir(), 'no-such-dir-mdp', 'audit.jsonl') });
    await expect(server.listen()).rejects.toThrow(/ENOENT/);
    await server.close();
  });
});

describe('skill 404s through the server', () => {
  it('have the empty body of the seed and say in their headers whether the client or the skill is unknown', async () => {
    const t = await startServer();
    await registeredClient(t, descriptor('alpha', [skill('/a/skill.md')]));
    const noClient = await fetch(`${t.http}/skills/hello/a`);
    expect([noClient.status, await noClient.text()]).toEqual([404, '']);
    expect(noClient.headers.get('mdp-error-code')).toBe('unknown_client');
    expect(noClient.headers.get('mdp-error')).toBe('No client "hello" is connected');
    const noSkill = await fetch(`${t.http}/alpha/skills/zzz`);
    expect([noSkill.status, await noSkill.text()]).toEqual([404, '']);
    expect(noSkill.headers.get('mdp-error-code')).toBe('unknown_path');
    expect(noSkill.headers.get('mdp-error')).toMatch(/^Client "alpha" has no skill "\/zzz"/);
  });

  it('expose those headers to pages, and write the reason to the access log', async () => {
    const { records, logger } = recordingLogger({ level: 'info' });
    const t = await startServer({ accessLog: true, logger });
    const res = await fetch(`${t.http}/skills/hello/a?x=1`, { headers: { origin: 'http://127.0.0.1:9' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('access-control-expose-headers')).toBe('mdp-error-code, mdp-error, mdp-client-candidates');
    expect(records).toContainEqual(
      expect.objectContaining({
        event: 'call',
        route: 'skill',
        clientId: 'hello',
        path: '/a',
        outcome: 'unknown_client',
        reason: 'No client "hello" is connected',
      }),
    );
  });
});
