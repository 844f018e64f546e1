/**
 * The open sessions and the liveness sweep over them. Every `heartbeatIntervalMs` (a clock timer,
 * held only while there are sessions) each session is pinged, or closed (4001) once it has been
 * silent for `heartbeatTimeoutMs`, {@link SWEEP_BATCH} sessions per turn of the event loop:
 * thousands of sessions gone silent together must not hold every other request meanwhile.
 */
import type { Clock } from './clock.js';
import { MAX_TIMER_MS } from './deadlines.js';
import type { Logger } from './logger.js';
import type { RouterLimits } from './router-options.js';
import { deliver, type Session } from './session.js';
import { Timer } from './timers.js';

/** Sessions pinged or expired per turn of the event loop by the liveness sweep. */
export const SWEEP_BATCH = 256;

export interface SessionTableOptions {
  readonly limits: Pick<RouterLimits, 'heartbeatIntervalMs' | 'heartbeatTimeoutMs'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Close a session that stayed silent too long (the router tells its transport, then ends it). */
  readonly expire: (session: Session) => void;
}

export class SessionTable {
  private readonly sessions = new Set<Session>();
  /** The sweep's timer, pending while there are sessions. */
  private readonly heartbeat: Timer;
  /** Set while a sweep goes through its sessions batch by batch (yielding a turn, not waiting on time). */
  private sweeping: NodeJS.Immediate | undefined;
  /** Set by `close()`: no sweep starts or goes on. */
  closed = false;

  constructor(private readonly options: SessionTableOptions) {
    // A sweep that throws (a bug) is logged; the next one is armed before it runs.
    this.heartbeat = new Timer(options.clock, (error) => options.logger.error('session.sweep_failed', { error }));
  }

  get size(): number {
    return this.sessions.size;
  }

  [Symbol.iterator](): IterableIterator<Session> {
    return this.sessions.values();
  }

  /** Open sessions by transport kind. Walks every session: for a scrape, not for a hot path. */
  countsByKind(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const session of this.sessions) counts.set(session.transport.kind, (counts.get(session.transport.kind) ?? 0) + 1);
    return counts;
  }

  /** Watch `session`; the sweep runs only while there are sessions, so an idle router holds no timer. */
  add(session: Session): void {
    this.sessions.add(session);
    if (!this.heartbeat.pending) this.arm();
  }

  /** Stop watching `session`. The caller stops the timers (`idle()`) once it has ended the session's work. */
  delete(session: Session): void {
    this.sessions.delete(session);
  }

  /** No session is left: stop the sweep's timers. */
  idle(): void {
    this.heartbeat.clear();
    if (this.sweeping) clearImmediate(this.sweeping);
    this.sweeping = undefined;
  }

  /** Stop for good: no sweep runs again. Idempotent. */
  close(): void {
    this.closed = true;
    this.idle();
  }

  /** Sweep every `heartbeatIntervalMs`, re-armed as it fires. */
  private arm(): void {
    this.heartbeat.after(Math.min(this.options.limits.heartbeatIntervalMs, MAX_TIMER_MS), () => {
      this.arm();
      this.sweep();
    });
  }

  private sweep(): void {
    // A sweep still under way (a huge number of sessions) is not started again.
    if (this.sweeping) return;
    const { clock, logger, limits, expire } = this.options;
    const sessions = [...this.sessions];
    // Silence is measured on the monotonic clock, so that a step of the machine's wall clock
    // (NTP, a resumed VM) expires nobody; the ping's stamp is a time of day, read by the client.
    const now = clock.now();
    const stamp = clock.wallNow();
    let next = 0;
    const step = (): void => {
      this.sweeping = undefined;
      const end = Math.min(next + SWEEP_BATCH, sessions.length);
      for (; next < end; next++) {
        const session = sessions[next] as Session;
        if (session.closed) continue;
        if (now - session.heardAt >= limits.heartbeatTimeoutMs) {
          logger.info('session.expired', { sessionId: session.id, clientId: session.clientId });
          expire(session);
        } else if (session.transport.wantsPing !== false) {
          deliver(session, { type: 'ping', timestamp: stamp }, logger);
        }
      }
      if (next < sessions.length && !this.closed) this.sweeping = setImmediate(step);
    };
    step();
  }
}
