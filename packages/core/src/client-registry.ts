/**
 * The registered clients and their catalogs: who holds each id (ownership.ts), what the catalogs
 * add up to (catalog-totals.ts), which trusted mirrors a bare id shadows, and each client's path
 * index. A registration or catalog update is checked in full before it changes anything; a refusal
 * throws `MdpError` and leaves the registry as it was.
 */
import type { AuthContext, ClientDescriptor, PathDescriptor } from '@mdp/protocol';
import type { IsServerId } from './aliases.js';
import { catalogProblem, fullBucket, measureCatalog, takeToken, type CatalogSize } from './catalog-limits.js';
import { CatalogTotals, type Counted } from './catalog-totals.js';
import type { Clock } from './clock.js';
import { MdpError } from './errors.js';
import type { Logger } from './logger.js';
import { mirrorOutranks, registrationRefusal, trustedMirror, type MirrorOwner, type Registrant } from './ownership.js';
import { PathIndex } from './path-index.js';
import { DEFAULT_SCOPE_NAMES, missingScope, type ScopeNames } from './scopes.js';
import type { RouterLimits } from './router-options.js';
import { SESSION_CLOSE, authSourceOf, countedAddress, type AuthSource, type Session } from './session.js';

/** A registered client as listings show it. */
export interface ClientInfo {
  readonly id: string;
  readonly descriptor: ClientDescriptor;
  readonly paths: readonly PathDescriptor[];
  readonly sessionId: string;
  readonly transportKind: string;
  readonly authSource: AuthSource;
  readonly registeredAt: number;
  /** Last message (or poll) on its session, ms since the epoch. */
  readonly lastSeen: number;
  /** Its connection is encrypted (TLS). */
  readonly secure: boolean;
  /**
   * The principal its id belongs to (ownership.ts): under an auth policy a hash, never a secret,
   * which a mirror of it carries to the hub so that the id stays that principal's there too;
   * without one its page's origin, or `undefined` for a local program.
   */
  readonly principal: string | undefined;
  /** The `Origin` of the web page that registered it; `undefined` for other programs. */
  readonly origin: string | undefined;
  /** The fleet node that holds it, when that is another node (SPEC §16, remote.ts); `undefined` here. */
  readonly node?: string | undefined;
}

export type ClientEvent =
  | { readonly type: 'registered'; readonly client: ClientInfo }
  | { readonly type: 'updated'; readonly client: ClientInfo }
  | { readonly type: 'unregistered'; readonly clientId: string };

export interface ClientRecord {
  readonly id: string;
  descriptor: ClientDescriptor;
  index: PathIndex;
  readonly session: Session;
  /** When it registered, ms since the epoch (the clock's wall clock). */
  readonly registeredAt: number;
  /** What it adds to the totals: its paths, its bytes, its address (catalog-totals.ts). */
  counted: Counted;
  /** Bytes of its descriptor's JSON with `paths: []`: what a catalog update keeps. */
  headBytes: number;
  /** The id it mirrors, when it is a trusted mirror (registered by a proven link of its member). */
  mirrorOf: string | undefined;
}

/** What the registry asks of the router around it. */
export interface RegistryHooks {
  /** Close a session from the server side (a replaced or evicted holder of an id). */
  closeSession(session: Session, why: (typeof SESSION_CLOSE)[keyof typeof SESSION_CLOSE]): void;
  /** Fail the calls waiting on `session` for `clientId` (its client went away). */
  failCalls(session: Session, clientId: string, reason: string): void;
  emit(event: ClientEvent): void;
  /**
   * Who holds `clientId` on another node of the fleet (SPEC §16), when no session here does: an id
   * stays its principal's fleet-wide. Undefined outside a fleet.
   */
  remoteHolder?(clientId: string): Registrant | undefined;
  /** Why the fleet cannot carry this client (its id is too long to announce), or undefined. */
  fleetProblem?(clientId: string, principal: string | undefined): string | undefined;
}

export interface ClientRegistryOptions {
  readonly limits: RouterLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly isServerId: IsServerId;
  readonly hooks: RegistryHooks;
  /** Which scope grants registering (`RouterOptions.registerScope`); default `mdp:register`. */
  readonly registerScope?: string | undefined;
}

/** The listing view of a record. */
export function clientInfo(record: ClientRecord): ClientInfo {
  const { session } = record;
  return {
    id: record.id,
    descriptor: record.descriptor,
    paths: record.descriptor.paths,
    sessionId: session.id,
    transportKind: session.transport.kind,
    authSource: authSourceOf(session),
    registeredAt: record.registeredAt,
    lastSeen: session.lastSeen,
    secure: session.transport.secure === true,
    principal: session.principal,
    origin: session.transport.origin,
  };
}

export class ClientRegistry {
  /** Registered clients by id: one per id, one per session. */
  readonly clients = new Map<string, ClientRecord>();
  /** What the catalogs of `clients` add up to (`maxTotalPaths`, `maxTotalCatalogBytes`, `maxClientsPerAddress`). */
  readonly totals: CatalogTotals;
  /** Trusted mirrors by the id they mirror (that id lives on their member): to see a bare id shadow one. */
  private readonly mirrors = new Map<string, Set<ClientRecord>>();
  private readonly limits: RouterLimits;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly isServerId: IsServerId;
  private readonly hooks: RegistryHooks;
  /** Only `register` is read here. */
  private readonly scopeNames: ScopeNames;

  constructor(options: ClientRegistryOptions) {
    ({ limits: this.limits, clock: this.clock, logger: this.logger, isServerId: this.isServerId, hooks: this.hooks } = options);
    this.scopeNames = options.registerScope === undefined ? DEFAULT_SCOPE_NAMES : { ...DEFAULT_SCOPE_NAMES, register: options.registerScope };
    this.totals = new CatalogTotals(this.limits);
  }

  register(session: Session, descriptor: ClientDescriptor, auth: AuthContext | undefined): void {
    // SPEC §17: a credential held to scopes registers only what its register scope grants.
    const lacking = session.scopes && session.peer === undefined ? missingScope(session.scopes, 'register', this.scopeNames, descriptor.id) : undefined;
    if (lacking !== undefined) {
      this.logger.info('client.register_refused', { clientId: descriptor.id, sessionId: session.id, principal: session.principal, missingScope: lacking });
      throw new MdpError('bad_request', `Registering ${JSON.stringify(descriptor.id)} needs scope ${lacking}`, {
        refusal: 'missing_scope',
        details: { scope: lacking },
      });
    }
    const fleetProblem = this.hooks.fleetProblem?.(descriptor.id, session.principal);
    if (fleetProblem !== undefined) throw new MdpError('bad_request', fleetProblem);
    const holder = this.clients.get(descriptor.id);
    // An id belongs to whoever registered it first (here, on the member that mirrors it here, or on
    // another node of the fleet): under an auth policy the credential's principal, without one the
    // page's origin; a session without a principal (a local program, no policy) replaces any, as
    // SPEC §4 says (ownership.ts).
    const refusal = registrationRefusal({
      descriptor,
      registrant: session,
      holder: holder ? (holder.session !== session ? holder.session : undefined) : this.hooks.remoteHolder?.(descriptor.id),
      mirrors: this.mirrorOwners(descriptor.id, session),
      isServerId: this.isServerId,
    });
    if (refusal !== undefined) {
      this.logger.info('client.takeover_refused', { clientId: descriptor.id, holderSessionId: holder?.session.id, sessionId: session.id, reason: refusal });
      throw new MdpError('bad_request', refusal, { refusal: 'client_id_taken' });
    }
    const previous = session.client;
    const replacedHolder = holder && holder !== previous ? holder : undefined;
    // The catalog's own limits first, then its address's (only a new client adds to it), then the
    // server's totals and the session's rate.
    const size = this.measure(descriptor.paths, descriptor);
    const address = countedAddress(session);
    const counted: Counted = { paths: descriptor.paths.length, bytes: size.bytes, address };
    const leaving = [previous?.counted, replacedHolder?.counted];
    if (previous === undefined) this.checkAddress(session, address, leaving);
    this.admitCatalog(session, counted, leaving);
    if (previous && previous.id !== descriptor.id) this.remove(previous, 'replaced by another registration on its session');
    if (holder && holder.session !== session) {
      this.logger.info('client.replaced', { clientId: descriptor.id, oldSessionId: holder.session.id, sessionId: session.id });
      this.hooks.closeSession(holder.session, SESSION_CLOSE.replaced);
    }
    session.messageAuth = auth;
    const existing = session.client;
    if (existing && existing.id === descriptor.id) {
      // The same client, so the same address: only its catalog changes.
      const same: Counted = { ...counted, address: existing.counted.address };
      this.totals.replace(existing.counted, same);
      existing.counted = same;
      existing.headBytes = size.headBytes;
      existing.descriptor = descriptor;
      existing.index = new PathIndex(descriptor.paths);
      this.trackMirror(existing);
      this.hooks.emit({ type: 'updated', client: clientInfo(existing) });
      return;
    }
    const record: ClientRecord = {
      id: descriptor.id,
      descriptor,
      index: new PathIndex(descriptor.paths),
      session,
      registeredAt: this.clock.wallNow(),
      counted,
      headBytes: size.headBytes,
      mirrorOf: undefined,
    };
    session.client = record;
    this.clients.set(record.id, record);
    this.totals.add(counted);
    this.trackMirror(record);
    this.logger.debug('client.registered', {
      clientId: record.id,
      sessionId: session.id,
      transport: session.transport.kind,
      authSource: authSourceOf(session),
      paths: descriptor.paths.length,
    });
    this.hooks.emit({ type: 'registered', client: clientInfo(record) });
    if (!this.evictLaterOwner(record)) this.noteShadows(record);
  }

  updateCatalog(session: Session, clientId: string, paths: PathDescriptor[]): void {
    const record = session.client;
    if (!record || record.id !== clientId) {
      throw new MdpError('bad_request', `Client ${JSON.stringify(clientId)} is not registered on this session`);
    }
    const size = this.measure(paths, record.headBytes);
    const counted: Counted = { paths: paths.length, bytes: size.bytes, address: record.counted.address };
    this.admitCatalog(session, counted, [record.counted]);
    this.totals.replace(record.counted, counted);
    record.counted = counted;
    record.descriptor = { ...record.descriptor, paths };
    record.index = new PathIndex(paths);
    this.logger.debug('client.catalog_updated', { clientId, paths: paths.length });
    this.hooks.emit({ type: 'updated', client: clientInfo(record) });
  }

  /** Unregister `record`: it leaves the registry and the totals, and its calls fail with `reason`. */
  remove(record: ClientRecord, reason: string): void {
    if (this.clients.get(record.id) === record) {
      this.clients.delete(record.id);
      this.totals.remove(record.counted);
    }
    this.untrackMirror(record);
    if (record.session.client === record) record.session.client = undefined;
    this.hooks.failCalls(record.session, record.id, reason);
    this.logger.debug('client.unregistered', { clientId: record.id, reason });
    this.hooks.emit({ type: 'unregistered', clientId: record.id });
  }

  /**
   * Measure a catalog, refused (`bad_request`, nothing changes) when it is over a limit of its own:
   * a path's shape, its number of paths, a text or schema in it, or its bytes (`too_large`).
   * `head`: the client descriptor, or the bytes of the one it keeps (`updateClientCatalog`).
   */
  private measure(paths: readonly PathDescriptor[], head: ClientDescriptor | number): CatalogSize {
    const problem = catalogProblem(paths, this.limits);
    if (problem) throw new MdpError('bad_request', problem);
    const size = measureCatalog(paths, head, this.limits);
    if ('problem' in size) throw new MdpError('bad_request', size.problem, { refusal: 'too_large' });
    return size;
  }

  /**
   * Refuse a measured catalog (`counted`) that would take the paths or bytes of all catalogs past
   * their limit (`leaving`: the catalogs it replaces), or a change over the session's rate.
   * Changes nothing but the session's rate.
   */
  private admitCatalog(session: Session, counted: Counted, leaving: readonly (Counted | undefined)[]): void {
    const full = this.totals.fullProblem(counted.paths, counted.bytes, leaving);
    if (full) {
      const { paths, bytes } = this.totals;
      this.logger.warn('catalog.server_full', {
        sessionId: session.id,
        totalPaths: paths,
        totalBytes: bytes,
        adding: counted.paths,
        addingBytes: counted.bytes,
      });
      throw new MdpError('not_ready', full);
    }
    const perMinute = this.limits.maxCatalogUpdatesPerMinute;
    const now = this.clock.now();
    const wait = takeToken((session.catalogBucket ??= fullBucket(perMinute, now)), now, perMinute);
    if (wait > 0) {
      throw new MdpError('bad_request', `Catalog changes over the limit of ${perMinute} per minute; retry in ${wait} ms`, {
        refusal: 'rate_limited',
        retryAfterMs: wait,
      });
    }
  }

  /**
   * Refuse a new client from `address` when it holds `maxClientsPerAddress` already, not counting
   * `leaving` (the clients the registration replaces).
   */
  private checkAddress(session: Session, address: string | undefined, leaving: readonly (Counted | undefined)[]): void {
    const problem = this.totals.addressProblem(address, leaving);
    if (problem === undefined) return;
    this.logger.info('client.address_full', { sessionId: session.id, address, held: this.totals.clientsOf(address as string) });
    throw new MdpError('bad_request', problem, { refusal: 'too_many_clients' });
  }

  /** The principals of the trusted mirrors of `id` on sessions other than `session`. */
  private *mirrorOwners(id: string, session: Session): Iterable<MirrorOwner> {
    const mirrors = this.mirrors.get(id);
    if (!mirrors) return;
    for (const mirror of mirrors) if (mirror.session !== session) yield mirror.session;
  }

  /**
   * A trusted mirror `record` of `x` just registered: when its client registered `x` first under
   * another principal than the bare holder of `x` here (owner-first, ownership.ts), that holder loses
   * the id (4403), as it would have been refused had the mirror come first. Returns whether it did.
   */
  private evictLaterOwner(record: ClientRecord): boolean {
    if (record.mirrorOf === undefined) return false;
    const bare = this.clients.get(record.mirrorOf);
    if (bare === undefined || bare.session === record.session) return false;
    const since = trustedMirror(record.descriptor, record.session)?.registeredAt ?? record.registeredAt;
    const outranks = mirrorOutranks(
      { principal: bare.session.principal, registeredAt: bare.registeredAt },
      { principal: record.session.principal, registeredAt: since },
    );
    if (!outranks) return false;
    this.logger.warn('client.owner_returned', { clientId: bare.id, sessionId: bare.session.id, mirrorId: record.id, member: record.session.peer });
    this.hooks.closeSession(bare.session, SESSION_CLOSE.heldByAnother);
    return true;
  }

  /**
   * Log a bare id that shadows a trusted mirror of it, whichever of the two `record` is: both stay,
   * the bare one answers for the id (owner-first, ownership.ts). At warn when they belong to
   * different principals: an agent that meant the mirrored client reaches another's by the bare id.
   */
  private noteShadows(record: ClientRecord): void {
    const bare = record.mirrorOf === undefined ? record : this.clients.get(record.mirrorOf);
    const mirrors = record.mirrorOf === undefined ? this.mirrors.get(record.id) : [record];
    if (bare === undefined || mirrors === undefined) return;
    for (const mirror of mirrors) {
      const otherPrincipal = mirror.session.principal !== bare.session.principal;
      this.logger[otherPrincipal ? 'warn' : 'debug']('client.mirror_shadowed', {
        clientId: bare.id,
        mirrorId: mirror.id,
        member: mirror.session.peer,
        otherPrincipal,
      });
    }
  }

  /** Index `record` by the id it mirrors when it is a trusted mirror (and only then). */
  private trackMirror(record: ClientRecord): void {
    const mirrored = trustedMirror(record.descriptor, record.session)?.clientId;
    if (mirrored === record.mirrorOf) return;
    this.untrackMirror(record);
    record.mirrorOf = mirrored;
    if (mirrored === undefined) return;
    let set = this.mirrors.get(mirrored);
    if (!set) this.mirrors.set(mirrored, (set = new Set()));
    set.add(record);
  }

  private untrackMirror(record: ClientRecord): void {
    if (record.mirrorOf === undefined) return;
    const set = this.mirrors.get(record.mirrorOf);
    set?.delete(record);
    if (set?.size === 0) this.mirrors.delete(record.mirrorOf);
    record.mirrorOf = undefined;
  }
}
