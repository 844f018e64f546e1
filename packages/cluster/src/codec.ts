/** Election messages to and from the cluster control wire format (SPEC §10). */
import type { ClusterMessage, ClusterRole, MembershipMode } from '@mdp/protocol';
import { uniqueStamps } from './clock.js';
import type { ElectionMessage } from './election.js';
import { helloProof, membershipFingerprint } from './membership.js';
import type { ResolvedOptions } from './options.js';

/** Fields every cluster message carries, filled in by the sender. */
export interface WireHeader {
  readonly clusterId: string;
  readonly serverId: string;
  /** This node's cluster URL, named as `candidateUrl` in vote requests. */
  readonly clusterUrl: string;
}

export function toWire(message: ElectionMessage, header: WireHeader, timestamp: number): ClusterMessage {
  const base = { clusterId: header.clusterId, serverId: header.serverId, term: message.term, timestamp };
  switch (message.type) {
    case 'heartbeat':
      return { type: 'clusterHeartbeat', ...base, leaderId: message.leaderId, leaderUrl: message.leaderUrl, leaseDurationMs: message.leaseDurationMs };
    case 'heartbeatAck':
      return { type: 'clusterHeartbeatAck', ...base, followerId: header.serverId, leaderId: message.leaderId };
    case 'voteRequest':
      return { type: 'clusterVoteRequest', ...base, candidateId: header.serverId, candidateUrl: header.clusterUrl, preVote: message.preVote };
    case 'voteResponse':
      return {
        type: 'clusterVoteResponse',
        ...base,
        voterId: header.serverId,
        voteGranted: message.granted,
        preVote: message.preVote,
        ...(message.leaderId !== undefined ? { leaderId: message.leaderId } : {}),
        ...(message.leaderUrl !== undefined ? { leaderUrl: message.leaderUrl } : {}),
      };
    case 'resign':
      return { type: 'clusterLeaderResign', ...base, leaderId: message.leaderId, ...(message.leaving ? { leaving: true } : {}) };
    case 'hello':
      // Hellos are built by the link layer, which knows the endpoints; never sent from here.
      throw new Error('hello is not encoded by toWire');
  }
}

/** The election's view of a wire message; undefined for messages the election does not handle (RPC). */
export function fromWire(message: ClusterMessage): ElectionMessage | undefined {
  switch (message.type) {
    case 'clusterHello':
      return {
        type: 'hello',
        term: message.term,
        role: message.role,
        ...(message.leaderId ? { leaderId: message.leaderId } : {}),
        ...(message.leaderUrl ? { leaderUrl: message.leaderUrl } : {}),
      };
    case 'clusterHeartbeat':
      return { type: 'heartbeat', term: message.term, leaderId: message.leaderId, leaderUrl: message.leaderUrl, leaseDurationMs: message.leaseDurationMs };
    case 'clusterHeartbeatAck':
      return { type: 'heartbeatAck', term: message.term, leaderId: message.leaderId };
    case 'clusterVoteRequest':
      return { type: 'voteRequest', term: message.term, preVote: message.preVote === true };
    case 'clusterVoteResponse':
      return {
        type: 'voteResponse',
        term: message.term,
        granted: message.voteGranted,
        preVote: message.preVote === true,
        ...(message.leaderId ? { leaderId: message.leaderId } : {}),
        ...(message.leaderUrl ? { leaderUrl: message.leaderUrl } : {}),
      };
    case 'clusterLeaderResign':
      return { type: 'resign', term: message.term, leaderId: message.leaderId, ...(message.leaving ? { leaving: true } : {}) };
    case 'clusterRpcRequest':
    case 'clusterRpcResponse':
      return undefined;
  }
}

export interface HelloFields {
  readonly term: number;
  readonly role: ClusterRole;
  readonly leaderId: string | undefined;
  readonly leaderUrl: string | undefined;
  readonly membershipMode: MembershipMode;
  readonly membershipFingerprint: string;
  readonly wsUrl: string;
  readonly clusterUrl: string;
}

/** The header of node `o`'s messages; `clusterUrl` is where it listens for control links. */
export function wireHeaderOf(o: Pick<ResolvedOptions, 'clusterId' | 'serverId'>, clusterUrl: string): WireHeader {
  return { clusterId: o.clusterId, serverId: o.serverId, clusterUrl };
}

/**
 * Builds node `o`'s hellos from its election view at the moment a link opens: the endpoints of
 * `self` and the membership never change, the timestamp is the wall clock's (the peer checks it
 * against its own; never the same twice, since a peer accepts a proof once: proof-memory.ts), and
 * with cluster secrets the hello proves the first one for the server `to`.
 */
export function helloBuilder(
  o: ResolvedOptions,
  self: { readonly wsUrl: string; readonly clusterUrl: string },
): (view: Pick<HelloFields, 'term' | 'role' | 'leaderId' | 'leaderUrl'>, to: string | undefined) => ClusterMessage {
  const header = wireHeaderOf(o, self.clusterUrl);
  const fixed = {
    membershipMode: o.membership.mode,
    membershipFingerprint: membershipFingerprint(o.membership),
    wsUrl: self.wsUrl,
    clusterUrl: self.clusterUrl,
  };
  const secret = o.clusterSecrets[0];
  const stamp = uniqueStamps(o.clock);
  return (view, to) => helloMessage(header, { ...view, ...fixed }, stamp(), secret === undefined ? undefined : { secret, to: to ?? '' });
}

/**
 * Our hello. With a cluster `secret` it carries the proof of it for the server `to` (its id, or ''
 * when a dialled address's id is not known yet).
 */
export function helloMessage(header: WireHeader, fields: HelloFields, timestamp: number, proof?: { secret: string; to: string }): ClusterMessage {
  const hello: ClusterMessage = {
    type: 'clusterHello',
    clusterId: header.clusterId,
    serverId: header.serverId,
    term: fields.term,
    timestamp,
    membershipMode: fields.membershipMode,
    membershipFingerprint: fields.membershipFingerprint,
    role: fields.role,
    wsUrl: fields.wsUrl,
    clusterUrl: fields.clusterUrl,
    ...(fields.leaderId ? { leaderId: fields.leaderId } : {}),
    ...(fields.leaderUrl ? { leaderUrl: fields.leaderUrl } : {}),
  };
  return proof ? { ...hello, auth: helloProof(proof.secret, header.clusterId, header.serverId, timestamp, proof.to) } : hello;
}
