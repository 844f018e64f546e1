/**
 * Mock MDP clients over the HTTP loop: connect, send registerClient, confirm with ping (the pong
 * comes back through poll), then keep exactly one long poll open and answer each callClient with a
 * send — without waiting for that send before polling again, as an efficient client does.
 */
import { Agent } from 'node:http';
import { SKILL_TEXT, clientId, registerMessage, type Population, type ReadVia } from '../fixtures.js';
import { httpRequest } from '../http-request.js';
import { countError, resultFrame, type ClientStats } from './stats.js';

const TEXT_JSON = JSON.stringify(SKILL_TEXT);
/** Long-poll wait asked of the server, ms (below its 25 s default so idle polls cycle). */
const POLL_WAIT_MS = 20_000;
const LOOP = '/mdp/http-loop';

class LoopClient {
  private sessionId = '';
  private stopped = false;
  private confirm: (() => void) | undefined;

  constructor(
    private readonly agent: Agent,
    private readonly port: number,
    private readonly id: string,
    private readonly stats: ClientStats,
  ) {}

  async start(skills: number, via: ReadVia = 'skill'): Promise<void> {
    const connected = await httpRequest(this.agent, this.port, 'POST', `${LOOP}/connect`, { 'content-type': 'application/json' }, '{}');
    if (connected.status !== 200) throw new Error(`connect ${this.id}: status ${connected.status}`);
    this.sessionId = (JSON.parse(connected.body) as { sessionId: string }).sessionId;
    await this.send(JSON.stringify({ message: registerMessage(this.id, skills, via) }));
    const confirmed = new Promise<void>((resolve) => (this.confirm = resolve));
    void this.pollLoop();
    await this.send(JSON.stringify({ message: { type: 'ping', timestamp: Date.now() } }));
    await confirmed;
  }

  private async send(body: string): Promise<void> {
    const res = await httpRequest(
      this.agent,
      this.port,
      'POST',
      `${LOOP}/send`,
      { 'content-type': 'application/json', 'x-mdp-session-id': this.sessionId },
      body,
    );
    if (res.status !== 202) throw new Error(`send ${this.id}: status ${res.status} ${res.body}`);
  }

  private sendLater(body: string): void {
    this.send(body).catch((error: Error) => {
      if (!this.stopped) countError(this.stats, error.message);
    });
  }

  private async pollLoop(): Promise<void> {
    const path = `${LOOP}/poll?waitMs=${POLL_WAIT_MS}`;
    const headers = { 'x-mdp-session-id': this.sessionId };
    while (!this.stopped) {
      let res;
      try {
        res = await httpRequest(this.agent, this.port, 'GET', path, headers, undefined, POLL_WAIT_MS + 10_000);
      } catch (error) {
        if (!this.stopped) countError(this.stats, `poll ${this.id}: ${(error as Error).message}`);
        return;
      }
      if (res.status === 204) continue;
      if (res.status !== 200) {
        if (!this.stopped) countError(this.stats, `poll ${this.id}: status ${res.status}`);
        return;
      }
      const message = (JSON.parse(res.body) as { message: { type: string; requestId?: string; timestamp?: number } }).message;
      if (message.type === 'callClient') {
        this.stats.served++;
        this.sendLater(`{"message":${resultFrame(message.requestId as string, TEXT_JSON)}}`);
      } else if (message.type === 'ping') {
        this.sendLater(JSON.stringify({ message: { type: 'pong', timestamp: message.timestamp } }));
      } else if (message.type === 'pong') {
        this.confirm?.();
        this.confirm = undefined;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await httpRequest(this.agent, this.port, 'POST', `${LOOP}/disconnect`, { 'x-mdp-session-id': this.sessionId }).catch(() => undefined);
  }
}

export class LoopClientPool {
  private clients: LoopClient[] = [];
  private agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });

  constructor(private readonly stats: ClientStats) {}

  async connect(url: string, population: Population, parallel: number): Promise<void> {
    const port = Number(new URL(url).port);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < population.clients) {
        const client = new LoopClient(this.agent, port, clientId(population.prefix, next++), this.stats);
        this.clients.push(client);
        await client.start(population.skills, population.via);
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, population.clients) }, worker));
  }

  async disconnect(): Promise<void> {
    const clients = this.clients;
    this.clients = [];
    await Promise.all(clients.map((client) => client.stop()));
    this.agent.destroy();
    this.agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });
  }
}
