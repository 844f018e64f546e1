/**
 * The thin impure shell around `election.ts`: one timer at the state's `wakeAt`, effects carried
 * out through a send port, durable term/vote written before anything that depends on them leaves,
 * and a change event whenever role, term or leader changes.
 */
import type { Logger } from '@mdp/core';
import type { ClusterMessage } from '@mdp/protocol';
import { WakeTimer, type Clock, type TimerSet } from './clock.js';
import { toWire, wireHeaderOf } from './codec.js';
import { loadDurableVote, saveDurableVote, storedTermFloor } from './durable.js';
import type { Membership } from './membership.js';
import { electionConfigOf, type ResolvedOptions } from './options.js';
import { seedFrom } from './rng.js';
import {
  hasQuorum,
  initialElection,
  knownMemberCount,
  quorumSize,
  reachableMemberCount,
  step,
  type DurableVote,
  type ElectionConfig,
  type ElectionEvent,
  type ElectionMessage,
  type ElectionState,
  type Role,
} from './election.js';

export interface LeaderView {
  readonly role: Role;
  readonly term: number;
  readonly leaderId: string | undefined;
  readonly leaderUrl: string | undefined;
}

export interface ElectionSnapshot extends LeaderView {
  readonly knownMemberCount: number;
  readonly reachableMemberCount: number;
  readonly quorumSize: number;
  readonly hasQuorum: boolean;
}

export interface ElectionPorts {
  send(to: string, message: ElectionMessage): void;
  broadcast(message: ElectionMessage): void;
  /** Store term and vote; called before the messages of the step that changed them are sent. */
  persist?(vote: DurableVote): void;
  /** The highest term any member stored on this host (see `storedTermFloor`); 0 without state files. */
  storedFloor?(): number;
}

export class ElectionDriver {
  private state: ElectionState;
  private readonly wake: WakeTimer;
  private readonly listeners = new Set<(view: LeaderView, previous: LeaderView) => void>();
  private dispatching = false;
  private readonly queue: ElectionEvent[] = [];

  constructor(
    config: ElectionConfig,
    private readonly clock: Clock,
    timers: TimerSet,
    private readonly ports: ElectionPorts,
    private readonly logger: Logger,
    seed: number,
    members: readonly string[],
    durable: DurableVote | undefined,
  ) {
    this.state = initialElection(config, clock.now(), seed, members, durable, ports.storedFloor?.() ?? 0);
    this.wake = new WakeTimer(clock, timers, () => this.dispatch({ type: 'tick' }));
  }

  /** Arm the first timer. */
  start(): void {
    this.wake.set(this.state.electionAt);
  }

  /** Feed one event. Re-entrant calls (an effect that causes an event) are queued, not nested. */
  dispatch(event: ElectionEvent): void {
    this.queue.push(event);
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) this.run(next);
    } finally {
      this.dispatching = false;
    }
  }

  private run(event: ElectionEvent): void {
    const before = this.state;
    let result;
    try {
      result = step(before, event, this.clock.now());
    } catch (error) {
      this.logger.error('cluster.election_step_failed', { event: event.type, error });
      return;
    }
    this.state = result.state;
    if (this.ports.persist && (before.term !== result.state.term || before.votedFor !== result.state.votedFor)) {
      this.ports.persist({ term: result.state.term, votedFor: result.state.votedFor });
    }
    for (const effect of result.effects) {
      try {
        if (effect.type === 'send') this.ports.send(effect.to, effect.message);
        else if (effect.type === 'broadcast') this.ports.broadcast(effect.message);
        else this.logger[effect.level](effect.event, effect.fields);
      } catch (error) {
        this.logger.error('cluster.election_effect_failed', { effect: effect.type, error });
      }
    }
    this.wake.set(result.wakeAt);
    if (
      before.role !== this.state.role ||
      before.term !== this.state.term ||
      before.leaderId !== this.state.leaderId ||
      before.leaderUrl !== this.state.leaderUrl
    ) {
      const previous = viewOf(before);
      const view = viewOf(this.state);
      if (view.leaderId !== previous.leaderId || view.role !== previous.role) {
        this.logger.info('cluster.leader_changed', { role: view.role, term: view.term, leaderId: view.leaderId, previousLeaderId: previous.leaderId });
      }
      for (const listener of this.listeners) {
        try {
          listener(view, previous);
        } catch (error) {
          this.logger.error('cluster.leader_listener_failed', { error });
        }
      }
    }
  }

  onChange(listener: (view: LeaderView, previous: LeaderView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  view(): LeaderView {
    return viewOf(this.state);
  }

  snapshot(): ElectionSnapshot {
    const now = this.clock.now();
    const known = knownMemberCount(this.state);
    return {
      ...viewOf(this.state),
      knownMemberCount: known,
      reachableMemberCount: reachableMemberCount(this.state, now),
      quorumSize: quorumSize(known),
      hasQuorum: hasQuorum(this.state, now),
    };
  }

  /** Member `id` is gone for good: it stops counting, and no term stored on this host is elected again. */
  memberGone(id: string): void {
    this.dispatch({ type: 'memberGone', id, termFloor: this.ports.storedFloor?.() ?? 0 });
  }

  /** Members known, this node included. */
  memberCount(): number {
    return knownMemberCount(this.state);
  }

  /** Stop: a leader resigns (the broadcast goes out now); then no timer is left. */
  stop(): void {
    this.dispatch({ type: 'stop' });
    this.wake.stop();
  }
}

/**
 * The driver of a member node listening at `self` (its MDP websocket is the leader URL it announces):
 * messages leave through `wire` in the wire format, randomness is seeded from the node's, and with a
 * `stateFile` term and vote are read from it and written to it.
 */
export function electionDriverFor(
  o: ResolvedOptions,
  self: { readonly wsUrl: string; readonly clusterUrl: string },
  wire: { send(to: string, message: ClusterMessage): void; broadcast(message: ClusterMessage): void },
  timers: TimerSet,
  logger: Logger,
): ElectionDriver {
  const file = o.stateFile;
  const header = wireHeaderOf(o, self.clusterUrl);
  const ports: ElectionPorts = {
    send: (to, message) => wire.send(to, toWire(message, header, o.clock.wallNow())),
    broadcast: (message) => wire.broadcast(toWire(message, header, o.clock.wallNow())),
    ...(file ? { persist: (vote: DurableVote) => void saveDurableVote(file, vote, logger), storedFloor: () => storedTermFloor(file, logger) } : {}),
  };
  const members = o.membership.mode === 'static' ? o.membership.members : [];
  const durable = file ? loadDurableVote(file, logger) : undefined;
  return new ElectionDriver(electionConfigOf(o, self.wsUrl), o.clock, timers, ports, logger, seedFrom(o.random), members, durable);
}

/** The snapshot of a node that has not started: a follower of nobody, knowing only the static members. */
export function unstartedSnapshot(membership: Membership): ElectionSnapshot {
  const known = membership.mode === 'static' ? Math.max(1, new Set(membership.members).size) : 1;
  return {
    role: 'follower',
    term: 0,
    leaderId: undefined,
    leaderUrl: undefined,
    knownMemberCount: known,
    reachableMemberCount: 1,
    quorumSize: quorumSize(known),
    hasQuorum: 1 >= quorumSize(known),
  };
}

function viewOf(s: ElectionState): LeaderView {
  return { role: s.role, term: s.term, leaderId: s.leaderId, leaderUrl: s.leaderUrl };
}
