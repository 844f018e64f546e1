/**
 * The load generator process: `concurrency` closed loops of requests on keep-alive connections for
 * `durationMs`, each target picked at random (seeded) from a population: skill reads, or host API
 * calls of endpoints (`population.via`). Every completed request's latency is kept, so p50/p99 are
 * exact. A request counts as an error unless it is a 200 carrying exactly the expected body (the
 * fixed skill text, as it is or as the host API's `{ok, data}`).
 */
import { Agent, request } from 'node:http';
import { SKILL_TEXT, clientId, endpointPath, skillReadPath, type Population } from './fixtures.js';
import { serveRpc } from './rpc.js';
import { SampleBuffer, summarize, xorshift, type LatencySummary } from './stats.js';

/** A request unanswered this long is an error, ms (the server's own call time-out is 15 s). */
const REQUEST_TIMEOUT_MS = 20_000;

export interface LoadArgs {
  readonly port: number;
  readonly population: Population;
  readonly concurrency: number;
  readonly durationMs: number;
  readonly seed?: number;
}

export interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly lastError: string | undefined;
  /** First request sent → last answer received, ms. */
  readonly elapsedMs: number;
  readonly rps: number;
  readonly latency: LatencySummary;
}

/** One request of the load: what to send and the only body that counts as success. */
interface Target {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body: string | undefined;
  readonly expected: string;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const HOST_CALL_ANSWER = JSON.stringify({ ok: true, data: SKILL_TEXT });

function targetsOf(population: Population): Target[] {
  const targets: Target[] = [];
  for (let i = 0; i < (population.readClients ?? population.clients); i++) {
    const id = clientId(population.prefix, i);
    for (let j = 0; j < population.skills; j++) {
      if ((population.via ?? 'skill') === 'skill') {
        targets.push({ method: 'GET', path: skillReadPath(id, j), body: undefined, expected: SKILL_TEXT });
      } else {
        const body = JSON.stringify({ clientId: id, method: 'POST', path: endpointPath(j), body: { n: j } });
        targets.push({ method: 'POST', path: '/mdp/call', body, expected: HOST_CALL_ANSWER });
      }
    }
  }
  return targets;
}

export function runLoad(args: LoadArgs): Promise<LoadResult> {
  const targets = targetsOf(args.population);
  const random = xorshift(args.seed ?? 1);
  const agent = new Agent({ keepAlive: true, maxSockets: args.concurrency, maxFreeSockets: args.concurrency });
  const samples = new SampleBuffer();
  let requests = 0;
  let errors = 0;
  let lastError: string | undefined;
  const started = performance.now();
  const deadline = started + args.durationMs;

  const loop = (resolve: () => void): void => {
    if (performance.now() >= deadline) return resolve();
    const target = targets.length === 1 ? (targets[0] as Target) : (targets[random() % targets.length] as Target);
    const { method, path } = target;
    const t0 = performance.now();
    let settled = false;
    const settle = (error: string | undefined): void => {
      if (settled) return;
      settled = true;
      if (error === undefined) {
        samples.push(performance.now() - t0);
        requests++;
      } else {
        errors++;
        lastError = error;
      }
      loop(resolve);
    };
    const headers = target.body === undefined ? undefined : JSON_HEADERS;
    const req = request({ agent, host: '127.0.0.1', port: args.port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        settle(res.statusCode === 200 && body === target.expected ? undefined : `${method} ${path}: ${res.statusCode} ${body.slice(0, 200)}`),
      );
      res.on('error', (error) => settle(`${method} ${path}: ${error.message}`));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timed out')));
    req.on('error', (error) => settle(`${method} ${path}: ${error.message}`));
    req.end(target.body);
  };

  return Promise.all(Array.from({ length: args.concurrency }, () => new Promise<void>((resolve) => loop(resolve)))).then(() => {
    const elapsedMs = performance.now() - started;
    agent.destroy();
    return { requests, errors, lastError, elapsedMs, rps: (requests / elapsedMs) * 1000, latency: summarize(samples) };
  });
}

serveRpc({ run: runLoad });
