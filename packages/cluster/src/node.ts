/**
 * `createClusterNode`: one server's membership in a cluster, as wiring. Who may join is
 * `join-rules.ts`, when a starting node may vote is `readiness.ts`, the election `election.ts`,
 * when a member is gone for good `departures.ts`, where clients are mirrored `upstream.ts`, and
 * host requests go through `member-host.ts`; this file feeds them what the control links and
 * discovery report and carries out what they decide.
 * apps/server owns the HTTP listener: it hands `/mdp/cluster` upgrades to `handleUpgrade`, reads
 * `meta()`/`features()` for GET /mdp/meta, calls `start(self)` once listening and `close()` on
 * shutdown.
 */
import { createLocalHost } from '@mdp/core';
import type { ClusterHello, ClusterMessage } from '@mdp/protocol';
import {
  SECRET_REFUSAL,
  allLinked,
  entryOf,
  initialAdmission,
  isClusterServerId,
  mayServeDefaultPort,
  memberEntries,
  roundView,
  step as stepAdmission,
  unlinkedOnHost,
  type AdmissionEffect,
  type ClusterConfigError,
} from './join-rules.js';
import type { ClusterNode, LeaderChange } from './api.js';
import { TimerSet } from './clock.js';
import { fromWire, helloBuilder } from './codec.js';
import { departureWatchFor, type DepartureWatch } from './departure-watch.js';
import { DEPARTURE_STRIKES, initialDepartures, step as stepDepartures, type DepartureEffect } from './departures.js';
import { discoveryFor, type Discovery } from './discovery.js';
import { electionDriverFor, unstartedSnapshot, type ElectionDriver } from './election-driver.js';
import { UPGRADE_UNAVAILABLE, linksFor, type LinkFaults, type LinkManager } from './links.js';
import { Listeners } from './listeners.js';
import { Machine } from './machine.js';
import { createMemberHost } from './member-host.js';
import { HELLO_MAX_AGE_MS } from './membership.js';
import { spendMirrorProof } from './mirror-proof.js';
import { admissionConfigOf, resolveOptions, settleMsOf, type ClusterNodeOptions, type ResolvedOptions } from './options.js';
import { PROOFS_FULL_REFUSAL, ProofMemory } from './proof-memory.js';
import { initialReadiness, step as stepReadiness } from './readiness.js';
import { createStandalone } from './standalone.js';
import { createUpstreamProxy, upstreamTarget } from './upstream.js';
import { clusterView } from './view.js';

export function createClusterNode(options: ClusterNodeOptions): ClusterNode {
  return createNode(options);
}

/** Test seams, kept out of the public options. */
export interface NodeSeams {
  /** Links a test has cut. */
  readonly faults?: LinkFaults;
}

export function createNode(input: ClusterNodeOptions, seams: NodeSeams = {}): ClusterNode {
  const o = resolveOptions(input);
  return o.mode === 'standalone' ? createStandalone(o) : createMember(o, seams);
}

function createMember(o: ResolvedOptions, seams: NodeSeams): ClusterNode {
  const logger = o.logger.child({ component: 'cluster', serverId: o.serverId });
  const timers = new TimerSet(o.clock, (error) => logger.error('cluster.timer_failed', { error }));
  const proxy = createUpstreamProxy(o, timers);
  const leaderListeners = new Listeners<LeaderChange>((error) => logger.error('cluster.leader_listener_failed', { error }));
  const configListeners = new Listeners<ClusterConfigError>((error) => logger.error('cluster.config_listener_failed', { error }));
  /** Who answers host requests may have changed: a leader change, or a link up or down. */
  const routeChanges = new Listeners<void>((error) => logger.error('cluster.route_listener_failed', { error }));
  const admission = new Machine(
    initialAdmission(admissionConfigOf(o)),
    stepAdmission,
    () => o.clock.wallNow(),
    (result) => result.effects.forEach(applyAdmission),
  );
  /** A member gone for good leaves admission and the election, and stops counting towards quorum. */
  const departures = new Machine(
    initialDepartures({ dynamic: o.membership.mode === 'dynamic', strikes: DEPARTURE_STRIKES }),
    stepDepartures,
    () => o.clock.now(),
    (result) => result.effects.forEach(applyDeparture),
  );
  /** Elections wait for the first discovery round and for links to what it found (or a deadline). */
  const readiness = new Machine(
    initialReadiness(settleMsOf(o)),
    stepReadiness,
    () => o.clock.now(),
    (result) => {
      if (result.ready) run?.driver.dispatch({ type: 'ready', leaderSeen: result.ready.leaderSeen });
    },
    { clock: o.clock, timers, tick: { type: 'tick' } },
  );
  /** Hello and mirror proofs accepted, each accepted once (proof-memory.ts). */
  const proofs = new ProofMemory(o.maxRememberedProofs);
  /** What exists once the node started. */
  let run: { readonly driver: ElectionDriver; readonly links: LinkManager; readonly discovery: Discovery; readonly watch: DepartureWatch } | undefined;
  let closing: Promise<void> | undefined;
  const linked = (id: string): boolean => run?.links.isUp(id) === true;
  /** Server ids of this cluster: the prefixes under which a mirrored client's id aliases its own. */
  const isServerId = (id: string): boolean => isClusterServerId(admission.state, id);
  const { hostApi, rpc } = createMemberHost(o, timers, logger, {
    local: createLocalHost(o.router, { isServerId, ...(o.tenancy ? { tenancy: o.tenancy } : {}) }),
    election: () => run?.driver,
    links: () => run?.links,
    onRouteChange: (listener) => routeChanges.add(listener),
  });

  function applyAdmission(effect: AdmissionEffect): void {
    if (effect.type === 'log') logger[effect.level](effect.event, effect.fields);
    else if (effect.type === 'configError') configListeners.emit(effect.error);
    else if (effect.type === 'leaderSeen') readiness.feed({ type: 'leaderSeen' });
    else if (effect.type === 'dial') run?.links.connect(effect.url, effect.id);
    else if (run) {
      logger.info('cluster.member_joined', { id: effect.id });
      run.driver.dispatch({ type: 'memberKnown', id: effect.id });
      if (run.links.isUp(effect.id)) run.driver.dispatch({ type: 'linkUp', id: effect.id });
    }
  }

  function applyDeparture(effect: DepartureEffect): void {
    if (!admission.state.members.has(effect.id)) return;
    logger.info('cluster.member_departed', { id: effect.id, reason: effect.reason });
    admission.feed({ type: 'gone', id: effect.id });
    rpc.failPeer(effect.id);
    run?.driver.memberGone(effect.id);
    routeChanges.emit();
  }

  /**
   * Why a peer's hello is refused, or undefined. A proof this node accepted before is a copy (the
   * peer's own hellos never repeat one): refused as a bad proof is, before admission sees it, so a
   * copy changes nothing there. A proof admission accepts is remembered until its window ends.
   */
  const checkHello = (hello: ClusterHello): string | undefined => {
    const now = o.clock.wallNow();
    const proof = o.clusterSecrets.length > 0 ? hello.auth : undefined;
    if (proof !== undefined && proofs.seen(proof, now)) {
      logger.warn('cluster.proof_replayed', { kind: 'hello', peer: hello.serverId, url: hello.clusterUrl });
      return SECRET_REFUSAL;
    }
    const refusal = admission.feed({ type: 'hello', hello }).refusal;
    if (refusal !== undefined || proof === undefined) return refusal;
    if (proofs.spend(proof, hello.timestamp + HELLO_MAX_AGE_MS, now) === 'fresh') return undefined;
    logger.warn('cluster.proof_memory_full', { kind: 'hello', peer: hello.serverId, capacity: proofs.capacity });
    return PROOFS_FULL_REFUSAL;
  };

  const onMessage = (peerId: string, message: ClusterMessage): void => {
    if (rpc.receive(peerId, message)) return;
    const election = fromWire(message);
    if (election) run?.driver.dispatch({ type: 'message', from: peerId, message: election });
    if (message.type === 'clusterLeaderResign' && message.leaving === true) departures.feed({ type: 'left', id: peerId });
  };

  return {
    serverId: o.serverId,
    clusterId: o.clusterId,
    mode: o.mode,
    hostApi,
    get activeTimers() {
      return timers.size;
    },
    get rememberedProofs() {
      return proofs.size;
    },

    start(self) {
      if (run || closing) return;
      admission.feed({ type: 'start', clusterUrl: self.clusterUrl });
      const driver = electionDriverFor(
        o,
        self,
        { send: (to, message) => run?.links.send(to, message), broadcast: (message) => run?.links.broadcast(message) },
        timers,
        logger,
      );
      driver.onChange((view, previous) => {
        const target = upstreamTarget(o.upstreamUrl, o.serverId, view, view.leaderId === undefined ? undefined : entryOf(admission.state, view.leaderId));
        if (target !== 'keep') proxy.setUpstream(target);
        leaderListeners.emit({ ...view, previousLeaderId: previous.leaderId });
        routeChanges.emit();
      });
      const hello = helloBuilder(o, self);
      const peers = { wanted: () => memberEntries(admission.state), hello: (to: string | undefined) => hello(driver.view(), to), check: checkHello };
      const links = linksFor(o, timers, logger, seams.faults, peers, {
        up: (peerId, hello) => {
          departures.feed({ type: 'linkUp', id: peerId });
          driver.dispatch({ type: 'linkUp', id: peerId });
          onMessage(peerId, hello);
          readiness.feed({ type: 'linkUp', allLinked: allLinked(admission.state, linked) });
          routeChanges.emit();
        },
        down: (peerId) => {
          rpc.failPeer(peerId);
          driver.dispatch({ type: 'linkDown', id: peerId });
          routeChanges.emit();
        },
        message: onMessage,
        alive: (peerId) => driver.dispatch({ type: 'alive', id: peerId }),
        refused: (url, reason) => void admission.feed({ type: 'refusedBy', url, reason }),
      });
      const discovery = discoveryFor(o, timers, logger, {
        found: (meta, url) => void admission.feed({ type: 'meta', meta, url }),
        roundDone: (round, timedOut) => {
          const view = roundView(admission.state, round, timedOut, driver.snapshot().knownMemberCount > 1);
          if (view.unknown.length > 0) logger.debug('cluster.discovery_timeouts', { round, addresses: view.unknown.slice(0, 5), count: view.unknown.length });
          driver.dispatch({ type: 'discoveryRound', clean: view.clean });
          readiness.feed({ type: 'roundDone', allLinked: allLinked(admission.state, linked) });
        },
      });
      // Only where a refused connection means that nothing listens (departures.ts).
      const watch = departureWatchFor(o, timers, {
        absent: () => unlinkedOnHost(admission.state, linked, o.discovery.host),
        report: (id, outcome) => void departures.feed({ type: 'probed', id, outcome }),
      });
      run = { driver, links, discovery, watch };
      links.start();
      if (o.membership.mode === 'dynamic') watch.start();
      driver.start();
      // A static member list is the whole truth: a list of one may elect itself without asking around.
      if (o.membership.mode === 'static') driver.dispatch({ type: 'discoveryRound', clean: true });
      discovery.start();
      if (o.upstreamUrl) proxy.setUpstream(o.upstreamUrl);
      logger.debug('cluster.started', { mode: o.mode, membership: o.membership.mode, clusterUrl: self.clusterUrl });
    },

    handleUpgrade(request, socket, head) {
      if (run) run.links.handleUpgrade(request, socket, head);
      else socket.end(UPGRADE_UNAVAILABLE);
    },

    isServerId,
    mirrorPeer(headers) {
      const spent = spendMirrorProof(headers, o.clusterSecrets, o.clusterId, o.serverId, o.clock.wallNow(), proofs);
      if (spent === undefined || 'peer' in spent) return spent?.peer;
      // The link then proves nothing: its registration of the member's ids is refused as without a proof.
      if (spent.refused === 'replayed') logger.warn('cluster.proof_replayed', { kind: 'mirror', peer: spent.serverId });
      else logger.warn('cluster.proof_memory_full', { kind: 'mirror', peer: spent.serverId, capacity: proofs.capacity });
      return undefined;
    },
    meta: () =>
      clusterView(
        o.clusterId,
        { mode: o.membership.mode, fingerprint: admission.state.config.fingerprint },
        o.leaseDurationMs,
        run?.driver.snapshot() ?? unstartedSnapshot(o.membership),
      ),
    features: () => ({ upstreamProxy: true, clusterControl: true }),
    servesDefaultPort: () => !closing && run?.driver.view().role === 'leader' && mayServeDefaultPort(admission.state),
    onLeaderChange: (listener) => leaderListeners.add(listener),
    onConfigError: (listener) => configListeners.add(listener),
    proxyStatus: () => proxy.status(),
    onProxyStatus: (listener) => proxy.onStatus(listener),

    close() {
      closing ??= (async () => {
        // Resign first: the frames go out before the links close, so the others elect at once.
        run?.driver.stop();
        run?.discovery.close();
        run?.watch.close();
        readiness.stop();
        await proxy.close();
        hostApi.close();
        rpc.close();
        await run?.links.close();
        timers.close();
        proofs.clear();
        for (const listeners of [leaderListeners, configListeners, routeChanges]) listeners.clear();
        logger.debug('cluster.closed');
      })();
      return closing;
    },
  };
}
