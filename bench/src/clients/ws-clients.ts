/**
 * Mock MDP clients over the websocket: each registers its skills, confirms with ping/pong (the
 * server handles a session's messages in order, so the pong proves the registration was applied),
 * then answers every callClient with the fixed skill text and every ping with a pong.
 */
import { WebSocket } from 'ws';
import { SKILL_TEXT, clientId, registerMessage, type Population, type ReadVia } from '../fixtures.js';
import { SampleBuffer, summarize, type LatencySummary } from '../stats.js';
import { countError, resultFrame, type ClientStats } from './stats.js';

const TEXT_JSON = JSON.stringify(SKILL_TEXT);
/** Longest wait for one client to connect and be confirmed, ms. */
const CONFIRM_TIMEOUT_MS = 30_000;

interface MockSocket {
  readonly ws: WebSocket;
  closing: boolean;
}

function openClient(
  url: string,
  id: string,
  skills: number,
  stats: ClientStats,
  onClose?: () => void,
  via: ReadVia = 'skill',
  descriptionBytes = 0,
  authorization?: string,
): Promise<MockSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, ...(authorization === undefined ? {} : { headers: { authorization } }) });
    const mock: MockSocket = { ws, closing: false };
    let confirmed = false;
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`client ${id} not confirmed within ${CONFIRM_TIMEOUT_MS} ms`));
    }, CONFIRM_TIMEOUT_MS);
    ws.on('open', () => {
      ws.send(JSON.stringify(registerMessage(id, skills, via, descriptionBytes)));
      ws.send(JSON.stringify({ type: 'ping', timestamp: Date.now() }));
    });
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString());
      switch (message.type) {
        case 'callClient':
          stats.served++;
          ws.send(resultFrame(message.requestId, TEXT_JSON));
          return;
        case 'ping':
          ws.send(JSON.stringify({ type: 'pong', timestamp: message.timestamp }));
          return;
        case 'pong':
          if (!confirmed) {
            confirmed = true;
            clearTimeout(timer);
            resolve(mock);
          }
          return;
      }
    });
    ws.on('error', (error) => {
      if (!mock.closing) countError(stats, `ws ${id}: ${error.message}`);
    });
    ws.on('close', (code, reason) => {
      if (!confirmed) {
        clearTimeout(timer);
        reject(new Error(`client ${id} closed before confirmation: ${code} ${reason.toString()}`));
      } else if (!mock.closing) countError(stats, `ws ${id} closed by the server: ${code} ${reason.toString()}`);
      onClose?.();
    });
  });
}

export class WsClientPool {
  private sockets: MockSocket[] = [];

  constructor(private readonly stats: ClientStats) {}

  /** Connect and confirm the whole population, `parallel` handshakes at a time. */
  async connect(url: string, population: Population, parallel: number): Promise<void> {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < population.clients) {
        const index = next++;
        this.sockets.push(
          await openClient(
            url,
            clientId(population.prefix, index),
            population.skills,
            this.stats,
            undefined,
            population.via,
            population.descriptionBytes,
            population.authorization,
          ),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, population.clients) }, worker));
  }

  async disconnect(): Promise<void> {
    const closing = this.sockets.map(
      (mock) =>
        new Promise<void>((resolve) => {
          mock.closing = true;
          if (mock.ws.readyState === WebSocket.CLOSED) return resolve();
          mock.ws.once('close', () => resolve());
          mock.ws.close(1000);
          // Do not wait forever for a closing handshake.
          setTimeout(() => {
            mock.ws.terminate();
            resolve();
          }, 5000).unref();
        }),
    );
    this.sockets = [];
    await Promise.all(closing);
  }
}

export interface ChurnResult {
  readonly registrations: number;
  readonly errors: number;
  readonly elapsedMs: number;
  /** Connect → registered and confirmed, ms. */
  readonly latency: LatencySummary;
}

/**
 * Registration rate: `concurrency` loops, each connecting a new client, registering `skills` skills,
 * waiting for the confirming pong, then closing and waiting for the close — for `durationMs`.
 */
export async function churn(url: string, concurrency: number, durationMs: number, skills: number, stats: ClientStats): Promise<ChurnResult> {
  const samples = new SampleBuffer();
  const errorsBefore = stats.errors;
  let registrations = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const worker = async (w: number): Promise<void> => {
    for (let k = 0; performance.now() < deadline; k++) {
      const t0 = performance.now();
      let closed!: () => void;
      const gone = new Promise<void>((resolve) => (closed = resolve));
      try {
        const mock = await openClient(url, `r${w}-${k}`, skills, stats, () => closed());
        samples.push(performance.now() - t0);
        registrations++;
        mock.closing = true;
        mock.ws.close(1000);
        await gone;
      } catch (error) {
        countError(stats, (error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  return { registrations, errors: stats.errors - errorsBefore, elapsedMs: performance.now() - started, latency: summarize(samples) };
}
