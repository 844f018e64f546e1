/**
 * The load generator process: `concurrency` closed loops of requests on keep-alive connections for
 * `durationMs`, each target picked at random (seeded) from a population: skill reads, host API
 * calls of endpoints, or MCP `tools/call`s of the generic `callPath` tool over Streamable HTTP, on
 * one MCP session opened first (`population.via`). Every completed request's latency is kept, so
 * p50/p99 are exact. A request counts as an error unless it is a 200 carrying the expected answer:
 * the fixed skill text, as it is, as the host API's `{ok, data}`, or as the tool result's
 * `structuredContent`.
 */
import { Agent, request } from 'node:http';
import { SKILL_TEXT, clientId, endpointPath, skillReadPath, type Population } from './fixtures.js';
import { httpRequest } from './http-request.js';
import { probeMeta, walkListings } from './listing-load.js';
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
  /** A fleet: the targets are every node's clients instead of `population`, each read sent by `sendTo`. */
  readonly fleet?: FleetLoad;
}

/**
 * The load of a fleet (the fleet scenarios): every node with the clients it holds, and which node
 * each read goes to: the one holding its client (a local read), one of the others, picked at random
 * per read (a remote read), or any node at random (what a load balancer in front does).
 */
export interface FleetLoad {
  readonly nodes: ReadonlyArray<{ readonly port: number; readonly population: Population }>;
  readonly sendTo: 'holder' | 'other' | 'any';
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

/** One request of the load: what to send and whether an answer counts as success. */
interface Target {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  /** The body; a function for bodies that differ per request (JSON-RPC ids). */
  readonly body: string | (() => string) | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;
  readonly succeeded: (body: string) => boolean;
  /** Fleet loads: the index of the node that holds the target's client. */
  readonly holder?: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const HOST_CALL_ANSWER = JSON.stringify({ ok: true, data: SKILL_TEXT });
const MCP_PROTOCOL_VERSION = '2025-06-18';

/** The JSON-RPC message of an MCP answer, plain JSON or the `data:` line of a server-sent event. */
function mcpMessage(body: string): { result?: { structuredContent?: { ok?: unknown; data?: unknown }; isError?: boolean } } | undefined {
  const start = body.indexOf('{');
  const end = body.lastIndexOf('}');
  if (start < 0 || end < start) return undefined;
  try {
    return JSON.parse(body.slice(start, end + 1)) as ReturnType<typeof mcpMessage>;
  } catch {
    return undefined;
  }
}

/** Open one MCP session on `port` (initialize, then initialized); its headers for every later request. */
async function openMcpSession(agent: Agent, port: number): Promise<Record<string, string>> {
  const headers = { ...JSON_HEADERS, accept: 'application/json, text/event-stream' };
  const initialize = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: MCP_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'mdp-bench', version: '1.0.0' } },
  };
  const answer = await httpRequestWithHeaders(agent, port, '/mcp', headers, JSON.stringify(initialize));
  const sessionId = answer.headers['mcp-session-id'];
  if (answer.status !== 200 || typeof sessionId !== 'string') throw new Error(`MCP initialize: ${answer.status} ${answer.body.slice(0, 200)}`);
  const session = { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': MCP_PROTOCOL_VERSION };
  const initialized = await httpRequest(agent, port, 'POST', '/mcp', session, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  if (initialized.status !== 202) throw new Error(`MCP initialized: ${initialized.status} ${initialized.body.slice(0, 200)}`);
  return session;
}

function httpRequestWithHeaders(
  agent: Agent,
  port: number,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, method: 'POST', path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function targetsOf(population: Population, agent: Agent, port: number): Promise<Target[]> {
  const via = population.via ?? 'skill';
  const mcp = via === 'mcp-call' ? await openMcpSession(agent, port) : undefined;
  const skillHeaders = population.authorization === undefined ? undefined : { authorization: population.authorization };
  let rpcId = 1;
  const targets: Target[] = [];
  for (let i = 0; i < (population.readClients ?? population.clients); i++) {
    const id = clientId(population.prefix, i);
    for (let j = 0; j < population.skills; j++) {
      const call = { clientId: id, method: 'POST', path: endpointPath(j), body: { n: j } };
      if (via === 'skill') {
        targets.push({ method: 'GET', path: skillReadPath(id, j), body: undefined, headers: skillHeaders, succeeded: (body) => body === SKILL_TEXT });
      } else if (via === 'host-call') {
        targets.push({ method: 'POST', path: '/mdp/call', body: JSON.stringify(call), headers: JSON_HEADERS, succeeded: (body) => body === HOST_CALL_ANSWER });
      } else {
        const args = JSON.stringify(call);
        targets.push({
          method: 'POST',
          path: '/mcp',
          body: () => `{"jsonrpc":"2.0","id":${rpcId++},"method":"tools/call","params":{"name":"callPath","arguments":${args}}}`,
          headers: mcp,
          succeeded: (body) => {
            const content = mcpMessage(body)?.result?.structuredContent;
            return content?.ok === true && content.data === SKILL_TEXT;
          },
        });
      }
    }
  }
  return targets;
}

/** Every node's clients as targets, each marked with the node that holds it. */
async function fleetTargets(fleet: FleetLoad, agent: Agent): Promise<Target[]> {
  const targets: Target[] = [];
  for (const [holder, node] of fleet.nodes.entries()) {
    if ((node.population.via ?? 'skill') === 'mcp-call') throw new Error('a fleet load reads skills or calls the host API, not MCP (one session per node)');
    for (const target of await targetsOf(node.population, agent, node.port)) targets.push({ ...target, holder });
  }
  return targets;
}

/** The port each read of a fleet load goes to (`FleetLoad.sendTo`); `port` without a fleet. */
function portPicker(args: LoadArgs, random: () => number): (target: Target) => number {
  const fleet = args.fleet;
  if (!fleet) return () => args.port;
  const ports = fleet.nodes.map((node) => node.port);
  const n = ports.length;
  if (n === 0) throw new Error('a fleet load needs nodes');
  if (fleet.sendTo === 'other' && n < 2) throw new Error('a remote read needs at least two nodes');
  switch (fleet.sendTo) {
    case 'holder':
      return (target) => ports[target.holder ?? 0] as number;
    case 'other':
      return (target) => ports[((target.holder ?? 0) + 1 + (random() % (n - 1))) % n] as number;
    case 'any':
      return () => ports[random() % n] as number;
  }
}

export async function runLoad(args: LoadArgs): Promise<LoadResult> {
  const random = xorshift(args.seed ?? 1);
  // maxSockets counts per host:port: a fleet load may hold `concurrency` sockets to each node.
  const agent = new Agent({ keepAlive: true, maxSockets: args.concurrency, maxFreeSockets: args.concurrency });
  const targets = args.fleet ? await fleetTargets(args.fleet, agent) : await targetsOf(args.population, agent, args.port);
  const portOf = portPicker(args, random);
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
    const port = portOf(target);
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
    const req = request({ agent, host: '127.0.0.1', port, path, method, headers: target.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => settle(res.statusCode === 200 && target.succeeded(body) ? undefined : `${method} ${path}: ${res.statusCode} ${body.slice(0, 200)}`));
      res.on('error', (error) => settle(`${method} ${path}: ${error.message}`));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timed out')));
    req.on('error', (error) => settle(`${method} ${path}: ${error.message}`));
    req.end(typeof target.body === 'function' ? target.body() : target.body);
  };

  await Promise.all(Array.from({ length: args.concurrency }, () => new Promise<void>((resolve) => loop(resolve))));
  const elapsedMs = performance.now() - started;
  agent.destroy();
  return { requests, errors, lastError, elapsedMs, rps: (requests / elapsedMs) * 1000, latency: summarize(samples) };
}

serveRpc({ run: runLoad, walk: walkListings, probeMeta });
