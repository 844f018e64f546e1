/** One HTTP request on a keep-alive agent, body collected as text. */
import { request, type Agent } from 'node:http';

export interface TextResponse {
  readonly status: number;
  readonly body: string;
}

export function httpRequest(
  agent: Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  timeoutMs = 60_000,
): Promise<TextResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
