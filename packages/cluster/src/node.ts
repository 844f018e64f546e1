/**
 * `createClusterNode`: one server's membership in a cluster, as wiring. Who may join is
 * `admission.ts`, when a starting node may vote is `readiness.ts`, the election `election.ts`,
 * when a member is gone for good `departures.ts`, where clients are mirrored `upstream.ts`, and
 * host requests go through `forward.ts`; this file
 * feeds them what the control links and discovery report and carries out what they decide.
 * apps/server owns the HTTP listener: it hands `/mdp/cluster` upgrades to `handleUpgrade`, reads
 * `meta()`/`features()` for GET /mdp/meta, calls `start(self)` once listening and `close()` on
 * shutdown.
 */
import { createLocalHost } from '@mdp/core';
import type { ClusterMessage } from '@mdp/protocol';
import {
  awaitingProof,
  entryOf,
  initialAdmission,
  mayServeDefaultPort,
  memberEntries,
  roundView,
  step as stepAdmission,
  type AdmissionEffect,
  type ClusterConfigError,
} from './admission.js';
import type { ClusterNode, LeaderChange } from './api.js';
import { TimerSet } from './clock.js';
import { fromWire, helloBuilder, type WireHeader } from './codec.js';
import { DepartureWatch } from './departure-watch.js';
import { DEPARTURE_STRIKES, initialDepartures, step as stepDepartures, type DepartureEffect } from './departures.js';
import { discoveryFor, type Discovery } from './discovery.js';
import { electionDriverFor, unstartedSnapshot, type ElectionDriver } from './election-driver.js';
import { createClusterHost, routeOf } from './forward.js';
import { UPGRADE_UNAVAILABLE, linksFor, type LinkFaults, type LinkManager } from './links.js';
import { Listeners } from './listeners.js';
import { Machine } from './machine.js';
import { verifyMirrorProof } from './mirror-proof.js';
import { membershipFingerprint, onHost } from './membership.js';
import { defaultPortUrlOf, hostTimingsOf, resolveOptions, settleMsOf, type ClusterNodeOptions, type ResolvedOptions } from './options.js';
import { initialReadiness, step as stepReadiness } from './readiness.js';
import { ClusterRpc } from './rpc.js';
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
  const fingerprint = membershipFingerprint(o.membership);
  const staticMembers = o.membership.mode === 'static' ? o.membership.members : [];
  const proxy = createUpstreamProxy(o, timers);
  const leaderListeners = new Listeners<LeaderChange>((error) => logger.error('cluster.leader_listener_failed', { error }));
  const configListeners = new Listeners<ClusterConfigError>((error) => logger.error('cluster.config_listener_failed', { error }));
  /** Who answers host requests may have changed: a leader change, or a link up or down. */
  const routeChanges = new Listeners<void>((error) => logger.error('cluster.route_listener_failed', { error }));
  /** Server ids of this cluster: the prefixes under which a mirrored client's id aliases its own. */
  const isServerId = (id: string): boolean => id === o.serverId || admission.state.members.has(id) || admission.state.departed.has(id);
  const local = createLocalHost(o.router, { isServerId });
  const defaultUrl = defaultPortUrlOf(o);
  const admission = new Machine(
    initialAdmission({
      selfId: o.serverId,
      clusterId: o.clusterId,
      membership: o.membership,
      fingerprint,
      secrets: o.clusterSecrets,
      ...(defaultUrl !== undefined ? { defaultUrl } : {}),
    }),
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
  const readiness = new Machine(initialReadiness(settleMsOf(o)), stepReadiness, () => o.clock.now(), (result) => {
    if (result.ready) run?.driver.dispatch({ type: 'ready', leaderSeen: result.ready.leaderSeen });
  }, { clock: o.clock, timers, tick: { type: 'tick' } });
  /** What exists once the node started. */
  let run: { readonly driver: ElectionDriver; readonly links: LinkManager; readonly discovery: Discovery; readonly watch: DepartureWatch } | undefined;
  let closing: Promise<void> | undefined;

  const send = (to: string, message: ClusterMessage): boolean => run?.links.send(to, message) ?? false;
  const rpc = new ClusterRpc({
    host: local,
    leads: () => run?.driver.view().role === 'leader',
    timers,
    logger,
    send: (to, body) => run !== undefined && send(to, { ...body, clusterId: o.clusterId, serverId: o.serverId, term: run.driver.view().term, timestamp: o.clock.wallNow() }),
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
   * Every member found so far has a link up (their hellos told us their terms), and every peer found
   * has shown whether it proves the cluster secret.
   */
  const allLinked = (): boolean => !awaitingProof(admission.state) && memberEntries(admission.state).every((entry) => run?.links.isUp(entry.id) === true);

  const onMessage = (peerId: string, message: ClusterMessage): void => {
    if (rpc.receive(peerId, message)) return;
    const election = fromWire(message);
    if (election) run?.driver.dispatch({ type: 'message', from: peerId, message: election });
    if (message.type === 'clusterLeaderResign' && message.leaving === true) departures.feed({ type: 'left', id: peerId });
  };

  const route = () => routeOf(run?.driver.view(), o.serverId, (id) => run?.links.isUp(id) === true, (run?.driver.memberCount() ?? 1) <= 1);
  const host = createClusterHost({ local, rpc, route, onRouteChange: (listener) => routeChanges.add(listener), clock: o.clock, timers, logger }, hostTimingsOf(o));

  return {
    serverId: o.serverId,
    clusterId: o.clusterId,
    mode: o.mode,
    host,
    get activeTimers() {
      return timers.size;
    },

    start(self) {
      if (run || closing) return;
      const header: WireHeader = { clusterId: o.clusterId, serverId: o.serverId, clusterUrl: self.clusterUrl };
      admission.feed({ type: 'start', clusterUrl: self.clusterUrl });
      const driver = electionDriverFor(o, header, self.wsUrl, { send, broadcast: (message) => run?.links.broadcast(message) }, timers, logger);
      driver.onChange((view, previous) => {
        const target = upstreamTarget(o.upstreamUrl, o.serverId, view, view.leaderId === undefined ? undefined : entryOf(admission.state, view.leaderId));
        if (target !== 'keep') proxy.setUpstream(target);
        leaderListeners.emit({ ...view, previousLeaderId: previous.leaderId });
        routeChanges.emit();
      });
      const fixed = { membershipMode: o.membership.mode, membershipFingerprint: fingerprint, wsUrl: self.wsUrl, clusterUrl: self.clusterUrl };
      const hello = helloBuilder(header, fixed, o.clusterSecrets[0], () => o.clock.wallNow());
      const links = linksFor(
        o,
        timers,
        logger,
        seams.faults,
        { wanted: () => memberEntries(admission.state), hello: (to) => hello(driver.view(), to), check: (hello) => admission.feed({ type: 'hello', hello }).refusal },
        {
          up: (peerId, hello) => {
            departures.feed({ type: 'linkUp', id: peerId });
            driver.dispatch({ type: 'linkUp', id: peerId });
            onMessage(peerId, hello);
            readiness.feed({ type: 'linkUp', allLinked: allLinked() });
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
        },
      );
      const discovery = discoveryFor(o, timers, logger, {
        found: (meta, url) => void admission.feed({ type: 'meta', meta, url }),
        roundDone: (round, timedOut) => {
          const view = roundView(admission.state, round, timedOut, driver.snapshot().knownMemberCount > 1);
          if (view.unknown.length > 0) logger.debug('cluster.discovery_timeouts', { round, addresses: view.unknown.slice(0, 5), count: view.unknown.length });
          driver.dispatch({ type: 'discoveryRound', clean: view.clean });
          readiness.feed({ type: 'roundDone', allLinked: allLinked() });
        },
      });
      // Only where a refused connection means that nothing listens (departures.ts).
      const watch = new DepartureWatch({
        intervalMs: Math.max(10, o.heartbeatIntervalMs / 2),
        probeTimeoutMs: o.discovery.probeTimeoutMs,
        timers,
        absent: () => memberEntries(admission.state).filter((e) => !links.isUp(e.id) && e.metaUrl !== undefined && onHost(e.metaUrl, o.discovery.host)),
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
    mirrorPeer: (headers) => verifyMirrorProof(headers, o.clusterSecrets, o.clusterId, o.serverId, o.clock.wallNow()),
    meta: () => clusterView(o.clusterId, { mode: o.membership.mode, fingerprint }, o.leaseDurationMs, run?.driver.snapshot() ?? unstartedSnapshot(staticMembers)),
    features: () => ({ upstreamProxy: true, clusterControl: true }),
    servesDefaultPort: () => defaultUrl !== undefined && !closing && run?.driver.view().role === 'leader' && mayServeDefaultPort(admission.state),
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
        host.close();
        rpc.close();
        await run?.links.close();
        timers.close();
        leaderListeners.clear();
        configListeners.clear();
        routeChanges.clear();
        logger.debug('cluster.closed');
      })();
      return closing;
    },
  };
}
