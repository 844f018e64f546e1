/**
 * Leader election as a pure transition: `step(state, event, now) → { state, effects, wakeAt }`.
 * No timers, sockets or `Math.random` in here — the driver feeds events in and carries effects out,
 * and randomness comes from a seed held in the state (SPEC §10, STYLE §6).
 *
 *            link to leader closed / resign (at once, staggered by rank)
 *            or no heartbeat for a random election time-out
 *   ┌──────────┐ ───────────────────────────────────────▶ pre-vote for term+1
 *   │ follower │ ◀─── heartbeat (term ≥ ours) ───┐         (term and vote unchanged)
 *   └──────────┘ ◀─── higher term seen ───┐      │              │ majority of KNOWN members
 *        ▲  ▲                              │      │              ▼ says "no live leader here"
 *        │  │ round timed out   ┌───────────┴┐     │        term+1, vote for self
 *        │  └───────────────────│ candidate  │ ◀──┼─────── ask every peer
 *        │                      └────────────┘     │
 *        │ lost quorum /               │ majority of known members granted
 *        │ higher term                 ▼          │
 *        │                      ┌────────────┐     │
 *        └──────────────────────│   leader   │ ────┘ heartbeats every interval, lease on each
 *                               └────────────┘
 *
 * Safety: a node grants at most one vote per term and a leader needs ⌊known/2⌋+1 of them, so two
 * leaders in one term would need a voter who voted twice. Across restarts the driver keeps term and
 * vote durable (`DurableVote`) when it has somewhere to store them; on top of that a freshly started
 * process refuses every vote for a grace period and never votes in a term it saw during it, because
 * an earlier incarnation of it may already have voted there.
 *
 * Departures (`memberGone`): a member the node has proof of being gone for good (it said it leaves,
 * or its address refuses connections; `departures.ts`) stops counting, and the quorum shrinks with
 * it, for rounds started afterwards only, in terms above every term the departed member may have
 * voted in (`termSeen`, `voteFloor`). The README has the whole argument and where it holds.
 */
import { randomBetween } from './rng.js';

export type Role = 'leader' | 'follower' | 'candidate';

export interface ElectionConfig {
  readonly selfId: string;
  /** What followers learn as `leaderUrl` when this node leads: its MDP websocket URL. */
  readonly selfUrl: string;
  /** Leader heartbeat period, ms (SPEC §10.3 default 1000). */
  readonly heartbeatIntervalMs: number;
  /** How long one heartbeat keeps a follower's lease on its leader, ms (SPEC §10.3 default 4000). */
  readonly leaseDurationMs: number;
  /** Random election time-out bounds, ms (SPEC §10.3 default 4500–7000). */
  readonly electionTimeoutMinMs: number;
  readonly electionTimeoutMaxMs: number;
  /** After start (and until `ready`), refuse every vote and remember the terms seen meanwhile, ms. */
  readonly voteGraceMs: number;
  /** Gap between survivors' pre-votes after the leader's link closes, ms; rank 0 goes first. */
  readonly failoverStepMs: number;
  /** False for a node that must never lead (proxy-required): it votes but never stands. */
  readonly canLead: boolean;
}

export interface MemberState {
  readonly id: string;
  /** At least one control link to this member is open and past hello. */
  readonly linkUp: boolean;
  /** Last message or link pong from it, ms; -Infinity when never. */
  readonly lastHeardAt: number;
  /** When leading: its last heartbeat ack (or vote) in the current term, ms. */
  readonly lastAckAt: number;
}

export interface ElectionState {
  readonly config: ElectionConfig;
  readonly role: Role;
  readonly term: number;
  readonly votedFor: string | undefined;
  readonly leaderId: string | undefined;
  readonly leaderUrl: string | undefined;
  /** Follower: our lease on `leaderId` holds until then, ms. 0 when none. */
  readonly leaseExpiresAt: number;
  /** Follower or candidate: when to start the next pre-vote, ms. Infinity when not scheduled. */
  readonly electionAt: number;
  /** Leader: when the next heartbeat goes out, ms. Infinity otherwise. */
  readonly heartbeatAt: number;
  /** Leader: no step-down for lost quorum before this, ms — new leaders and new members get one lease to ack. */
  readonly quorumGraceUntil: number;
  /** A pre-vote round in flight: the term it proposes and who said yes (self included). */
  readonly preVote: { readonly term: number; readonly granted: readonly string[] } | undefined;
  /** Candidate: who voted for us this term (self included). */
  readonly votes: readonly string[];
  /** Known members other than self. Grows by discovery; shrinks only by `memberGone`. */
  readonly members: ReadonlyMap<string, MemberState>;
  /**
   * Highest term any member's message carried, adopted or not (a vote request refused under a live
   * lease is not adopted). Elections start above it, so a term another member already used is not
   * reused even after every node that used it is gone.
   */
  readonly termSeen: number;
  readonly startedAt: number;
  /**
   * Votes are refused, and elections start above, every term ≤ this: terms seen during the start-up
   * grace, and the highest term any server of this cluster stored on this host (`termFloor`).
   */
  readonly voteFloor: number;
  /** Membership has settled enough to stand for election (first discovery round done). */
  readonly ready: boolean;
  /**
   * A discovery round got a definite answer from every address that is not already a member, so
   * this node's member set can be trusted to be whole. Until then it does not stand for election:
   * a probe that timed out may hide a peer that is counting a different set of members (or none,
   * and about to elect itself alone). Sticky once true.
   */
  readonly viewConfirmed: boolean;
  /** Shut down: never stands or votes again. */
  readonly stopped: boolean;
  /** Seed of the generator behind election time-outs and jitter. */
  readonly rng: number;
}

/** Election messages between members; the driver adds clusterId, serverId and timestamp on the wire. */
export type ElectionMessage =
  | { readonly type: 'hello'; readonly term: number; readonly role: Role; readonly leaderId?: string; readonly leaderUrl?: string }
  | { readonly type: 'heartbeat'; readonly term: number; readonly leaderId: string; readonly leaderUrl: string; readonly leaseDurationMs: number }
  | { readonly type: 'heartbeatAck'; readonly term: number; readonly leaderId: string }
  | { readonly type: 'voteRequest'; readonly term: number; readonly preVote: boolean }
  | {
      readonly type: 'voteResponse';
      readonly term: number;
      readonly granted: boolean;
      readonly preVote: boolean;
      readonly leaderId?: string;
      readonly leaderUrl?: string;
    }
  /** A leader resigns; with `leaving`, any member (then `leaderId` is itself) leaves the cluster. */
  | { readonly type: 'resign'; readonly term: number; readonly leaderId: string; readonly leaving?: boolean };

export type ElectionEvent =
  /** A timer the driver set for `wakeAt` fired (or any time: ticks are idempotent). */
  | { readonly type: 'tick' }
  | { readonly type: 'memberKnown'; readonly id: string }
  /**
   * Membership has settled (first discovery round finished, links dialed): votes and elections may
   * start. `leaderSeen: false` says no peer reported a leader, so the first election need not wait
   * a whole time-out.
   */
  | { readonly type: 'ready'; readonly leaderSeen?: boolean }
  /** After each discovery round: whether every probe of a non-member got a definite answer in time. */
  | { readonly type: 'discoveryRound'; readonly clean: boolean }
  | { readonly type: 'linkUp'; readonly id: string }
  | { readonly type: 'linkDown'; readonly id: string }
  /** A link-level pong: the member is alive even if it has nothing to say. */
  | { readonly type: 'alive'; readonly id: string }
  /**
   * `id` is gone for good (it left, or its address proves nobody is there): stop counting it.
   * `termFloor`: the highest term stored by any member on this host (its last one included), so
   * that the members left never elect in a term the gone one may have led.
   */
  | { readonly type: 'memberGone'; readonly id: string; readonly termFloor?: number }
  | { readonly type: 'message'; readonly from: string; readonly message: ElectionMessage }
  /** Shutting down: every member says it leaves (a leader resigns); afterwards the node neither stands nor votes. */
  | { readonly type: 'stop' };

export type ElectionEffect =
  | { readonly type: 'send'; readonly to: string; readonly message: ElectionMessage }
  | { readonly type: 'broadcast'; readonly message: ElectionMessage }
  | { readonly type: 'log'; readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly event: string; readonly fields?: Record<string, unknown> };

export interface StepResult {
  readonly state: ElectionState;
  readonly effects: readonly ElectionEffect[];
  /** When the driver should tick next, ms; undefined when nothing is scheduled. */
  readonly wakeAt: number | undefined;
}

/** Majority of `known` members. */
export function quorumSize(known: number): number {
  return Math.floor(known / 2) + 1;
}

/** Term and vote as a node stores them so that a restart cannot make it vote twice in one term. */
export interface DurableVote {
  readonly term: number;
  readonly votedFor: string | undefined;
}

/**
 * A node's first state. `durable` is its own stored term and vote; `termFloor` the highest term any
 * server of the cluster stored on this host (an earlier member may have led in it and be gone now).
 */
export function initialElection(
  config: ElectionConfig,
  now: number,
  seed: number,
  members: readonly string[] = [],
  durable?: DurableVote,
  termFloor = 0,
): ElectionState {
  validateConfig(config);
  const map = new Map<string, MemberState>();
  for (const id of members) if (id !== config.selfId) map.set(id, newMember(id));
  const base: ElectionState = {
    config,
    role: 'follower',
    term: durable?.term ?? 0,
    votedFor: durable?.votedFor,
    leaderId: undefined,
    leaderUrl: undefined,
    leaseExpiresAt: 0,
    electionAt: Infinity,
    heartbeatAt: Infinity,
    quorumGraceUntil: 0,
    preVote: undefined,
    votes: [],
    members: map,
    termSeen: durable?.term ?? 0,
    startedAt: now,
    voteFloor: Math.max(0, termFloor),
    ready: false,
    viewConfirmed: false,
    stopped: false,
    rng: seed | 0,
  };
  // The first election waits a whole random time-out: peers get time to announce a live leader.
  return scheduleElection(base, now);
}

function validateConfig(config: ElectionConfig): void {
  const positive = ['heartbeatIntervalMs', 'leaseDurationMs', 'electionTimeoutMinMs', 'electionTimeoutMaxMs'] as const;
  for (const key of positive) {
    if (!(Number.isFinite(config[key]) && config[key] > 0)) throw new RangeError(`${key} must be a positive number of ms`);
  }
  if (config.electionTimeoutMaxMs < config.electionTimeoutMinMs) {
    throw new RangeError('electionTimeoutMaxMs must not be below electionTimeoutMinMs');
  }
  if (!(config.voteGraceMs >= 0) || !(config.failoverStepMs >= 0)) throw new RangeError('voteGraceMs and failoverStepMs must be ≥ 0');
}

function newMember(id: string): MemberState {
  return { id, linkUp: false, lastHeardAt: -Infinity, lastAckAt: -Infinity };
}

// ---------------------------------------------------------------------------------------------
// Views

export function knownMemberCount(s: ElectionState): number {
  return s.members.size + 1;
}

/** Members, self included, heard from within the lease window (a leader counts acks only). */
export function reachableMemberCount(s: ElectionState, now: number): number {
  const since = now - s.config.leaseDurationMs;
  let count = 1;
  for (const m of s.members.values()) {
    if (!m.linkUp) continue;
    if ((s.role === 'leader' ? m.lastAckAt : m.lastHeardAt) > since) count += 1;
  }
  return count;
}

export function hasQuorum(s: ElectionState, now: number): boolean {
  return reachableMemberCount(s, now) >= quorumSize(knownMemberCount(s));
}

export function leaseLive(s: ElectionState, now: number): boolean {
  return s.role === 'follower' && s.leaderId !== undefined && s.leaseExpiresAt > now;
}

/** Until membership settled and the grace passed, a node neither votes nor stands. */
function inGrace(s: ElectionState, now: number): boolean {
  return !s.ready || now < s.startedAt + s.config.voteGraceMs;
}

// ---------------------------------------------------------------------------------------------
// The transition

export function step(state: ElectionState, event: ElectionEvent, now: number): StepResult {
  const fx: ElectionEffect[] = [];
  const next = apply(state, event, now, fx);
  return { state: next, effects: fx, wakeAt: wakeAtOf(next) };
}

function wakeAtOf(s: ElectionState): number | undefined {
  const at = Math.min(s.electionAt, s.heartbeatAt);
  return Number.isFinite(at) ? at : undefined;
}

function apply(s: ElectionState, event: ElectionEvent, now: number, fx: ElectionEffect[]): ElectionState {
  switch (event.type) {
    case 'tick':
      return onTick(s, now, fx);
    case 'memberKnown':
      return onMemberKnown(s, event.id, now);
    case 'ready':
      return onReady(s, event.leaderSeen ?? true, now);
    case 'discoveryRound':
      return s.viewConfirmed || !event.clean ? s : { ...s, viewConfirmed: true };
    // Only known members take part: a peer that linked in but was never admitted (an observer)
    // may follow the leader, but its votes, acks and claims count for nothing here.
    case 'linkUp':
      return s.members.has(event.id) ? onLinkUp(s, event.id, now, fx) : s;
    case 'linkDown':
      return s.members.has(event.id) ? onLinkDown(s, event.id, now, fx) : s;
    case 'alive':
      return s.members.has(event.id) ? touch(s, event.id, now) : s;
    case 'memberGone':
      return s.members.has(event.id) ? onMemberGone(s, event.id, event.termFloor ?? 0, now, fx) : s;
    case 'message':
      return s.members.has(event.from) ? onMessage(touch(s, event.from, now), event.from, event.message, now, fx) : s;
    case 'stop':
      return onStop(s, fx);
  }
}

function withMember(s: ElectionState, member: MemberState): ElectionState {
  const members = new Map(s.members);
  members.set(member.id, member);
  return { ...s, members };
}

function onReady(s: ElectionState, leaderSeen: boolean, now: number): ElectionState {
  if (s.ready) return s;
  const next: ElectionState = { ...s, ready: true };
  if (leaderSeen || !s.config.canLead || s.stopped || s.role !== 'follower' || s.leaderId !== undefined) return next;
  // Found nobody at all: wait the whole time-out, so that discovery gets more rounds before we
  // elect ourselves alone (a peer missed by one slow round would otherwise elect alone too).
  if (s.members.size === 0) return next;
  // Found peers and nobody leads: elect as soon as the grace allows, staggered like a failover.
  return scheduleFailover(next, Math.max(now, s.startedAt + s.config.voteGraceMs), undefined);
}

function onMemberKnown(s: ElectionState, id: string, now: number): ElectionState {
  if (id === s.config.selfId || s.members.has(id)) return s;
  const next = withMember(s, newMember(id));
  // A bigger member set may need one more ack for quorum: give the newcomer a lease to connect.
  return next.role === 'leader' ? { ...next, quorumGraceUntil: now + s.config.leaseDurationMs } : next;
}

/**
 * A member is gone for good: it stops counting. The smaller quorum applies to rounds started from
 * now on only: a round in flight counted votes against the old set, and the gone member may have
 * voted for someone else in it before it went, so that round is dropped and a new one, in a new
 * term, starts soon. A node left without a leader elects soon too.
 */
function onMemberGone(s: ElectionState, id: string, termFloor: number, now: number, fx: ElectionEffect[]): ElectionState {
  const members = new Map(s.members);
  members.delete(id);
  let next: ElectionState = { ...s, members, voteFloor: Math.max(s.voteFloor, termFloor) };
  fx.push({ type: 'log', level: 'debug', event: 'cluster.member_gone', fields: { id, knownMemberCount: knownMemberCount(next), term: next.term } });
  if (next.stopped || next.role === 'leader') return next;
  if (next.leaderId === id) next = { ...next, leaderId: undefined, leaderUrl: undefined, leaseExpiresAt: 0 };
  if (next.leaderId !== undefined) return next;
  next = { ...next, role: 'follower', votes: [], preVote: undefined };
  return scheduleFailover(next, now, id);
}

/** A leader whose quorum is gone (outside the grace window after election or a new member). */
function lostQuorum(s: ElectionState, now: number): boolean {
  return now >= s.quorumGraceUntil && !hasQuorum(s, now);
}

function member(s: ElectionState, id: string): MemberState {
  return s.members.get(id) ?? newMember(id);
}

/** Record that member `id` was heard from. */
function touch(s: ElectionState, id: string, now: number): ElectionState {
  const known = s.members.get(id);
  return known ? withMember(s, { ...known, lastHeardAt: now }) : s;
}

function random(s: ElectionState, min: number, max: number): [number, ElectionState] {
  const [value, rng] = randomBetween(s.rng, min, max);
  return [value, { ...s, rng }];
}

/** Next pre-vote after a fresh random election time-out (never before our lease runs out). */
function scheduleElection(s: ElectionState, now: number): ElectionState {
  const [timeout, next] = random(s, s.config.electionTimeoutMinMs, s.config.electionTimeoutMaxMs);
  return { ...next, electionAt: Math.max(now + timeout, next.leaseExpiresAt) };
}

/**
 * The leader is gone for certain (its link closed, or it resigned): elect at once, but staggered
 * by rank among the survivors we can reach so that two of them rarely split the vote.
 */
function scheduleFailover(s: ElectionState, now: number, formerLeader: string | undefined): ElectionState {
  const survivors = [s.config.selfId];
  for (const m of s.members.values()) if (m.linkUp && m.id !== formerLeader) survivors.push(m.id);
  survivors.sort();
  const rank = survivors.indexOf(s.config.selfId);
  const stepMs = s.config.failoverStepMs;
  // Rank 0 still waits a moment: peers need to see the same link close before they will agree.
  const [jitter, next] = random(s, stepMs * 0.1, stepMs * 0.5);
  return { ...next, electionAt: Math.min(s.electionAt, now + rank * stepMs + jitter) };
}

/** Adopt a higher term: forget the vote; a leader or candidate becomes a follower. */
function adoptTerm(s: ElectionState, term: number, now: number, fx: ElectionEffect[]): ElectionState {
  if (term <= s.term) return s;
  fx.push({ type: 'log', level: 'debug', event: 'cluster.term_adopted', fields: { from: s.term, to: term } });
  let next: ElectionState = { ...s, term, votedFor: undefined, preVote: undefined, votes: [] };
  if (s.role !== 'follower') {
    if (s.role === 'leader') fx.push({ type: 'log', level: 'info', event: 'cluster.step_down', fields: { reason: 'higher term', term } });
    next = { ...next, role: 'follower', heartbeatAt: Infinity };
    next = scheduleElection(next, now);
  }
  return { ...next, leaderId: undefined, leaderUrl: undefined, leaseExpiresAt: 0 };
}

/** During the start-up grace every term we see raises the floor we will never vote at or below. */
function observeTerm(s: ElectionState, term: number, now: number): ElectionState {
  return inGrace(s, now) && term > s.voteFloor ? { ...s, voteFloor: term } : s;
}

function stepDown(s: ElectionState, now: number, reason: string, fx: ElectionEffect[]): ElectionState {
  fx.push({ type: 'log', level: 'info', event: 'cluster.step_down', fields: { reason, term: s.term } });
  return scheduleElection({ ...s, role: 'follower', leaderId: undefined, leaderUrl: undefined, heartbeatAt: Infinity, leaseExpiresAt: 0, votes: [] }, now);
}

// ---------------------------------------------------------------------------------------------
// Timers

function onTick(s: ElectionState, now: number, fx: ElectionEffect[]): ElectionState {
  if (s.stopped) return s;
  if (s.role === 'leader') {
    // Quorum first: a leader that was frozen must not send one more heartbeat on a stale lease.
    if (lostQuorum(s, now)) return stepDown(s, now, 'lost quorum', fx);
    if (now >= s.heartbeatAt) {
      fx.push({ type: 'broadcast', message: heartbeatOf(s) });
      return { ...s, heartbeatAt: now + s.config.heartbeatIntervalMs };
    }
    return s;
  }
  if (now < s.electionAt) return s;
  if (leaseLive(s, now)) return { ...s, electionAt: s.leaseExpiresAt };
  return startPreVote(s, now, fx);
}

function startPreVote(s: ElectionState, now: number, fx: ElectionEffect[]): ElectionState {
  if (!s.config.canLead) return { ...s, electionAt: Infinity };
  // Not before membership settled and not during the grace: we might not know whom we already voted for.
  if (!s.ready || inGrace(s, now)) return scheduleElection(s, now);
  // Only with a member set a clean discovery round confirmed (see `viewConfirmed`).
  if (!s.viewConfirmed) return scheduleElection(s, now);
  const term = nextTerm(s);
  const next: ElectionState = {
    ...s,
    role: 'follower',
    votes: [],
    leaderId: undefined,
    leaderUrl: undefined,
    leaseExpiresAt: 0,
    preVote: { term, granted: [s.config.selfId] },
  };
  if (quorumSize(knownMemberCount(next)) <= 1) return becomeCandidate(next, now, fx);
  fx.push({ type: 'log', level: 'debug', event: 'cluster.pre_vote', fields: { term } });
  fx.push({ type: 'broadcast', message: { type: 'voteRequest', term, preVote: true } });
  return scheduleRetry(next, now);
}

/**
 * Next attempt after a pre-vote or vote round that may fail, in one to two heartbeat intervals: a
 * round needs one round trip, a refused pre-vote disturbs nobody, and peers that refused only
 * because they were starting up or still held a lease soon answer differently. The spread is wide
 * compared with a round trip, so two nodes rarely retry together.
 */
function scheduleRetry(s: ElectionState, now: number): ElectionState {
  const [wait, next] = random(s, s.config.heartbeatIntervalMs, 2 * s.config.heartbeatIntervalMs);
  return { ...next, electionAt: now + wait };
}

/** The term a new election proposes: above ours, every term seen in the start-up grace and every term any member used. */
function nextTerm(s: ElectionState): number {
  return Math.max(s.term, s.voteFloor, s.termSeen) + 1;
}

function becomeCandidate(s: ElectionState, now: number, fx: ElectionEffect[]): ElectionState {
  const term = nextTerm(s);
  const next: ElectionState = {
    ...s,
    role: 'candidate',
    term,
    votedFor: s.config.selfId,
    votes: [s.config.selfId],
    preVote: undefined,
    leaderId: undefined,
    leaderUrl: undefined,
    leaseExpiresAt: 0,
  };
  fx.push({ type: 'log', level: 'info', event: 'cluster.election_started', fields: { term } });
  if (quorumSize(knownMemberCount(next)) <= 1) return becomeLeader(next, now, fx);
  fx.push({ type: 'broadcast', message: { type: 'voteRequest', term, preVote: false } });
  return scheduleRetry(next, now);
}

function becomeLeader(s: ElectionState, now: number, fx: ElectionEffect[]): ElectionState {
  // Voters count as acked now: they granted moments ago, and their first acks are one round trip away.
  const members = new Map<string, MemberState>();
  for (const m of s.members.values()) members.set(m.id, { ...m, lastAckAt: s.votes.includes(m.id) ? now : -Infinity });
  const next: ElectionState = {
    ...s,
    members,
    role: 'leader',
    leaderId: s.config.selfId,
    leaderUrl: s.config.selfUrl,
    leaseExpiresAt: 0,
    electionAt: Infinity,
    heartbeatAt: now + s.config.heartbeatIntervalMs,
    quorumGraceUntil: now + s.config.leaseDurationMs,
    preVote: undefined,
  };
  fx.push({ type: 'log', level: 'info', event: 'cluster.leader_elected', fields: { term: s.term, votes: s.votes.length } });
  fx.push({ type: 'broadcast', message: heartbeatOf(next) });
  return next;
}

function heartbeatOf(s: ElectionState): ElectionMessage {
  return {
    type: 'heartbeat',
    term: s.term,
    leaderId: s.config.selfId,
    leaderUrl: s.config.selfUrl,
    leaseDurationMs: s.config.leaseDurationMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Links

function onLinkUp(s: ElectionState, id: string, now: number, fx: ElectionEffect[]): ElectionState {
  if (id === s.config.selfId) return s;
  const next = withMember(s, { ...member(s, id), linkUp: true, lastHeardAt: now });
  // A new or returning follower need not wait a whole interval to learn who leads.
  if (next.role === 'leader') fx.push({ type: 'send', to: id, message: heartbeatOf(next) });
  return next;
}

function onLinkDown(s: ElectionState, id: string, now: number, fx: ElectionEffect[]): ElectionState {
  if (!s.members.has(id)) return s;
  let next = withMember(s, { ...member(s, id), linkUp: false });
  if (next.stopped) return next;
  if (next.role === 'follower' && next.leaderId === id) {
    // A closed link is what a dying leader process leaves behind: treat the lease as lost now.
    fx.push({ type: 'log', level: 'info', event: 'cluster.leader_link_lost', fields: { leaderId: id, term: next.term } });
    next = { ...next, leaderId: undefined, leaderUrl: undefined, leaseExpiresAt: 0 };
    return scheduleFailover(next, now, id);
  }
  if (next.role === 'leader' && lostQuorum(next, now)) return stepDown(next, now, 'lost quorum', fx);
  return next;
}

// ---------------------------------------------------------------------------------------------
// Messages

function onMessage(s: ElectionState, from: string, message: ElectionMessage, now: number, fx: ElectionEffect[]): ElectionState {
  if (from === s.config.selfId) return s;
  // A pre-vote request proposes a term nobody holds yet; every other message names a real one.
  const proposal = message.type === 'voteRequest' && message.preVote;
  const seen = proposal || message.term <= s.termSeen ? s : { ...s, termSeen: message.term };
  const observed = observeTerm(seen, message.term, now);
  switch (message.type) {
    case 'hello':
      return adoptTerm(observed, message.term, now, fx);
    case 'heartbeat':
      return onHeartbeat(observed, from, message, now, fx);
    case 'heartbeatAck':
      return onHeartbeatAck(observed, from, message.term, now, fx);
    case 'voteRequest':
      return message.preVote ? onPreVoteRequest(observed, from, message.term, now, fx) : onVoteRequest(observed, from, message.term, now, fx);
    case 'voteResponse':
      return onVoteResponse(observed, from, message, now, fx);
    case 'resign':
      return onResign(observed, from, message.term, now, fx);
  }
}

function onHeartbeat(
  s: ElectionState,
  from: string,
  message: Extract<ElectionMessage, { type: 'heartbeat' }>,
  now: number,
  fx: ElectionEffect[],
): ElectionState {
  if (message.term < s.term) {
    // A stale leader: our answer carries the newer term, which makes it step down.
    fx.push({ type: 'send', to: from, message: { type: 'heartbeatAck', term: s.term, leaderId: s.leaderId ?? '' } });
    return s;
  }
  if (message.term === s.term && leaseLive(s, now) && s.leaderId !== from) {
    // Two leaders in one term cannot happen while votes are counted right; do not flip between them.
    fx.push({ type: 'log', level: 'error', event: 'cluster.two_leaders', fields: { term: s.term, following: s.leaderId, other: from } });
    return s;
  }
  let next = adoptTerm(s, message.term, now, fx);
  if (next.role === 'leader') {
    // Cannot happen while votes are counted right; refuse to carry on as a second leader.
    fx.push({ type: 'log', level: 'error', event: 'cluster.two_leaders', fields: { term: next.term, other: from } });
    next = stepDown(next, now, 'another leader in the same term', fx);
  }
  if (next.stopped) return next;
  next = {
    ...next,
    role: 'follower',
    leaderId: from,
    leaderUrl: message.leaderUrl,
    leaseExpiresAt: now + message.leaseDurationMs,
    preVote: undefined,
    votes: [],
  };
  next = scheduleElection(next, now);
  fx.push({ type: 'send', to: from, message: { type: 'heartbeatAck', term: next.term, leaderId: from } });
  return next;
}

function onHeartbeatAck(s: ElectionState, from: string, term: number, now: number, fx: ElectionEffect[]): ElectionState {
  if (term > s.term) return adoptTerm(s, term, now, fx);
  if (s.role !== 'leader' || term !== s.term) return s;
  return withMember(s, { ...member(s, from), lastAckAt: now });
}

/** Whether a vote for `from` in `term` may be given at all (shared by pre-vote and vote). */
function voteRefusal(s: ElectionState, from: string, term: number, now: number): string | undefined {
  if (s.stopped) return 'stopping';
  if (inGrace(s, now)) return 'starting up';
  if (term <= s.voteFloor) return 'term at or below the floor';
  if (term < s.term) return 'older term';
  if (leaseLive(s, now) && s.leaderId !== from) return 'leader lease is live';
  return undefined;
}

function onPreVoteRequest(s: ElectionState, from: string, term: number, now: number, fx: ElectionEffect[]): ElectionState {
  // Answer as a real vote would be answered, but change nothing.
  let reason = voteRefusal(s, from, term, now);
  if (!reason && s.role === 'leader') reason = 'I am the leader';
  if (!reason && term === s.term && s.votedFor !== undefined && s.votedFor !== from) reason = 'already voted this term';
  fx.push({ type: 'send', to: from, message: voteResponse(s, !reason, true) });
  if (reason) fx.push({ type: 'log', level: 'debug', event: 'cluster.pre_vote_refused', fields: { candidate: from, term, reason } });
  return s;
}

function onVoteRequest(s: ElectionState, from: string, term: number, now: number, fx: ElectionEffect[]): ElectionState {
  const refusal = voteRefusal(s, from, term, now);
  if (refusal === 'leader lease is live' || refusal === 'older term' || refusal === 'stopping') {
    // Leader stickiness: with a live lease the term is not adopted either, so no disruption.
    fx.push({ type: 'send', to: from, message: voteResponse(s, false, false) });
    return s;
  }
  let next = adoptTerm(s, term, now, fx);
  const granted = refusal === undefined && (next.votedFor === undefined || next.votedFor === from);
  if (granted) {
    next = scheduleElection({ ...next, votedFor: from }, now);
    fx.push({ type: 'log', level: 'debug', event: 'cluster.vote_granted', fields: { candidate: from, term } });
  }
  fx.push({ type: 'send', to: from, message: voteResponse(next, granted, false) });
  return next;
}

function voteResponse(s: ElectionState, granted: boolean, preVote: boolean): ElectionMessage {
  const leader = s.leaderId !== undefined && s.leaderUrl !== undefined ? { leaderId: s.leaderId, leaderUrl: s.leaderUrl } : {};
  return { type: 'voteResponse', term: s.term, granted, preVote, ...leader };
}

function onVoteResponse(
  s: ElectionState,
  from: string,
  message: Extract<ElectionMessage, { type: 'voteResponse' }>,
  now: number,
  fx: ElectionEffect[],
): ElectionState {
  if (message.term > s.term) return adoptTerm(s, message.term, now, fx);
  if (!message.granted || s.stopped) return s;
  const quorum = quorumSize(knownMemberCount(s));
  if (message.preVote) {
    if (!s.preVote || s.role !== 'follower' || s.preVote.granted.includes(from)) return s;
    const granted = [...s.preVote.granted, from];
    const next = { ...s, preVote: { ...s.preVote, granted } };
    return granted.length >= quorum ? becomeCandidate(next, now, fx) : next;
  }
  if (s.role !== 'candidate' || message.term !== s.term || s.votes.includes(from)) return s;
  const votes = [...s.votes, from];
  const next = { ...s, votes };
  return votes.length >= quorum ? becomeLeader(next, now, fx) : next;
}

function onResign(s: ElectionState, from: string, term: number, now: number, fx: ElectionEffect[]): ElectionState {
  if (term < s.term) return s;
  let next = adoptTerm(s, term, now, fx);
  if (next.role !== 'follower' || (next.leaderId !== undefined && next.leaderId !== from)) return next;
  // Our leader resigned; or we follow nobody, and a member leaving is a good moment to elect.
  if (next.leaderId === from) fx.push({ type: 'log', level: 'info', event: 'cluster.leader_resigned', fields: { leaderId: from, term } });
  next = { ...next, leaderId: undefined, leaderUrl: undefined, leaseExpiresAt: 0 };
  return next.stopped ? next : scheduleFailover(next, now, from);
}

function onStop(s: ElectionState, fx: ElectionEffect[]): ElectionState {
  if (s.stopped) return s;
  // Every member says it leaves (a leader's resign says both), so a dynamic cluster stops counting it.
  fx.push({ type: 'broadcast', message: { type: 'resign', term: s.term, leaderId: s.config.selfId, leaving: true } });
  return {
    ...s,
    stopped: true,
    role: 'follower',
    leaderId: undefined,
    leaderUrl: undefined,
    electionAt: Infinity,
    heartbeatAt: Infinity,
    preVote: undefined,
  };
}
