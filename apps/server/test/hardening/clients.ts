/** Small clients for the hardening tests: HTTP reads that may give up, websocket clients that register. */
import { type Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { TestClient, descriptor, skill } from '@mdp/test-kit';

export interface ReadResult {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface ReadOptions {
  readonly headers?: Record<string, string>;
  /** Give up (abort the request) after this many ms: `'aborted'` then. */
  readonly abortAfterMs?: number;
  readonly agent?: Agent;
  readonly method?: string;
}

/** One HTTP request to `base` + `path`; resolves with the answer, or `'aborted'` when it gave up first. */
export function read(base: string, path: string, options: ReadOptions = {}): Promise<ReadResult | 'aborted'> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: options.agent,
        signal: options.abortAfterMs === undefined ? undefined : AbortSignal.timeout(options.abortAfterMs),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', () => resolve('aborted'));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => (error.name === 'AbortError' || error.code === 'ABORT_ERR' ? resolve('aborted') : reject(error)));
    req.end();
  });
}

/** Connect a websocket client and register `id` with one skill `/s/skill.md`; resolves once registered (a ping round trip). */
export async function wsClientWithSkill(url: string, id: string, answer: unknown = `skill of ${id}`, headers?: Record<string, string>): Promise<TestClient> {
  const client = await TestClient.register(url, descriptor(id, [skill('/s/skill.md')]), headers ? { headers } : {});
  client.handler = () => answer;
  return client;
}
