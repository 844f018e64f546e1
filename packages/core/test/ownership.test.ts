/**
 * Client ids under an auth policy in a cluster (ownership.ts): a member's mirrored ids are that
 * member's alone; a bare id on the hub and a member's mirror of it coexist, the bare one answering
 * for the id (owner-first), whichever arrived first. Without a policy, a page's ids are its origin's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mirroredId } from '@mdp/protocol';
import { MdpError, Router, createLogger } from '../src/index.js';
import { HELD, memberPrefixOf, mirrorOutranks, originPrincipal, registrationRefusal, type RegistrationFacts } from '../src/ownership.js';
import { FakeTransport, client, manualClock } from './helpers.js';

const F = '127.0.0.1:4001';
const G = '127.0.0.1:4002';
const members = (id: string): boolean => id === F || id === G;
const marked = (serverId: string, clientId: string) => client(mirroredId(serverId, clientId), undefined, { metadata: { mdpProxy: { serverId, clientId } } });

describe('memberPrefixOf', () => {
  it('finds the member a dotted id is named under, server ids with dots included', () => {
    expect(memberPrefixOf(`${F}.app`, members)).toBe(F);
    expect(memberPrefixOf(`${G}.a.b`, members)).toBe(G);
    expect(memberPrefixOf('app', members)).toBeUndefined();
    expect(memberPrefixOf('127.0.0.1:4003.app', members)).toBeUndefined();
    expect(memberPrefixOf(`${F}.`, members)).toBeUndefined();
    expect(memberPrefixOf(F, members)).toBeUndefined();
  });
});

describe('registrationRefusal', () => {
  const facts = (over: Partial<RegistrationFacts>): RegistrationFacts => ({
    descriptor: client('app'),
    registrant: { principal: 'b', peer: undefined },
    holder: undefined,
    mirrors: [],
    isServerId: members,
    ...over,
  });

  it('applies nothing without a policy (no principals): any session takes any id', () => {
    expect(
      registrationRefusal(
        facts({ registrant: { principal: undefined, peer: undefined }, descriptor: marked(F, 'app'), holder: { principal: undefined, peer: F } }),
      ),
    ).toBeUndefined();
  });

  it("keeps a member's mirrored ids for that member's proven links, marked or not", () => {
    expect(registrationRefusal(facts({ descriptor: marked(F, 'app') }))).toContain(`mirror of cluster member "${F}"`);
    expect(registrationRefusal(facts({ descriptor: client(`${F}.app`) }))).toContain('only that member registers it');
    expect(registrationRefusal(facts({ descriptor: marked(F, 'app'), registrant: { principal: 'b', peer: G } }))).toBeDefined();
    // F's own link registers it, whoever held it before.
    expect(
      registrationRefusal(facts({ descriptor: marked(F, 'app'), registrant: { principal: 'a', peer: F }, holder: { principal: 'b', peer: undefined } })),
    ).toBeUndefined();
  });

  it('refuses an id held by another principal, here or on the member that mirrors it here (owner-first)', () => {
    expect(registrationRefusal(facts({ holder: { principal: 'a', peer: undefined } }))).toBe('Client id held by another principal');
    expect(registrationRefusal(facts({ holder: { principal: 'b', peer: undefined } }))).toBeUndefined();
    expect(registrationRefusal(facts({ mirrors: [{ principal: 'a' }] }))).toBe('Client id held by another principal');
    // Its owner may register it here too (a client that comes back here after a failover).
    expect(registrationRefusal(facts({ registrant: { principal: 'a', peer: undefined }, mirrors: [{ principal: 'a' }] }))).toBeUndefined();
    // Without a policy: a page may not shadow a local program's client on a member; a program may.
    expect(registrationRefusal(facts({ registrant: { principal: 'origin:https://evil.example', peer: undefined }, mirrors: [{ principal: undefined }] }))).toBe(
      HELD,
    );
    expect(
      registrationRefusal(facts({ registrant: { principal: undefined, peer: undefined }, mirrors: [{ principal: 'origin:https://app.example' }] })),
    ).toBeUndefined();
  });
});

describe('mirrorOutranks', () => {
  it('gives an id to the client registered first, between two principals; never between one', () => {
    expect(mirrorOutranks({ principal: 'b', registeredAt: 200 }, { principal: 'a', registeredAt: 100 })).toBe(true);
    expect(mirrorOutranks({ principal: 'b', registeredAt: 100 }, { principal: 'a', registeredAt: 200 })).toBe(false);
    expect(mirrorOutranks({ principal: 'b', registeredAt: 100 }, { principal: 'a', registeredAt: 100 })).toBe(false); // a tie: the holder keeps it
    expect(mirrorOutranks({ principal: 'a', registeredAt: 200 }, { principal: 'a', registeredAt: 100 })).toBe(false);
  });

  it("without a policy, a local program's client (no principal) outranks a page's, never the reverse", () => {
    expect(mirrorOutranks({ principal: 'origin:https://evil.example', registeredAt: 100 }, { principal: undefined, registeredAt: 200 })).toBe(true);
    expect(mirrorOutranks({ principal: undefined, registeredAt: 200 }, { principal: 'origin:https://app.example', registeredAt: 100 })).toBe(false);
    expect(mirrorOutranks({ principal: undefined, registeredAt: 200 }, { principal: undefined, registeredAt: 100 })).toBe(false);
  });
});

describe('Router under a policy, in a cluster', () => {
  let router: Router;
  let known: (id: string) => boolean;

  let logs: Array<Record<string, unknown>>;

  beforeEach(() => {
    known = members;
    logs = [];
    const logger = createLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
    // Clients here register at 5000 ms since the epoch.
    router = new Router({ clock: manualClock(5000), isServerId: (id) => known(id), logger });
  });

  afterEach(async () => {
    await router.close();
  });

  const open = (principal: string, peer?: string) => {
    const transport = new FakeTransport('ws');
    return { transport, session: router.openSession(transport, undefined, principal, peer) };
  };
  const refusalOf = (fn: () => void): string | undefined => {
    try {
      fn();
      return undefined;
    } catch (error) {
      return error instanceof MdpError ? error.refusal : String(error);
    }
  };

  /** A follower's mirror of `app`, its client registered there at `registeredAt`. */
  const markedAt = (registeredAt: number) =>
    client(mirroredId(F, 'app'), undefined, { metadata: { mdpProxy: { serverId: F, clientId: 'app', registeredAt } } });

  it.each(['bare first', 'mirror first'])(
    'owner-first, %s: between two principals the client registered first keeps the id, whichever reaches the leader first',
    (order) => {
      // The follower's client registered at t=1000; the leader's bare `app` registers later, at 5000.
      const bareOwner = open('principal-b');
      const bare = () => refusalOf(() => bareOwner.session.handle({ type: 'registerClient', client: client('app') }));
      const mirror = () => open('principal-a', F).session.handle({ type: 'registerClient', client: markedAt(1000) });
      if (order === 'mirror first') {
        mirror();
        expect(bare()).toBe('client_id_taken');
      } else {
        expect(bare()).toBeUndefined();
        mirror();
        expect(bareOwner.transport.closes).toEqual([{ code: 4403, reason: 'Client id held by another principal' }]);
        expect(logs.filter((l) => l.event === 'client.owner_returned')).toEqual([
          expect.objectContaining({ level: 'warn', clientId: 'app', mirrorId: `${F}.app` }),
        ]);
      }
      // The same end: only the mirror, and `app` reaches it (aliases.ts).
      expect(router.listClients().map((c) => [c.id, c.principal])).toEqual([[`${F}.app`, 'principal-a']]);
    },
  );

  it("keeps a bare id registered before the member's client: the mirror stays under its prefixed id", () => {
    const bareOwner = open('principal-b');
    bareOwner.session.handle({ type: 'registerClient', client: client('app') });
    open('principal-a', F).session.handle({ type: 'registerClient', client: markedAt(9000) });
    expect(bareOwner.transport.closes).toEqual([]);
    expect(
      router
        .listClients()
        .map((c) => c.id)
        .sort(),
    ).toEqual([`${F}.app`, 'app'].sort());
    expect(logs.filter((l) => l.event === 'client.mirror_shadowed')).toEqual([expect.objectContaining({ level: 'warn', otherPrincipal: true })]);
  });

  it("notes a shadowed mirror of the same principal at debug only (its owner's client, moved here after a failover)", () => {
    open('principal-a', F).session.handle({ type: 'registerClient', client: marked(F, 'app') });
    open('principal-a').session.handle({ type: 'registerClient', client: client('app') });
    expect(router.hasClient('app')).toBe(true);
    expect(logs.filter((l) => l.event === 'client.mirror_shadowed')).toEqual([expect.objectContaining({ level: 'debug', otherPrincipal: false })]);
  });

  it('refuses a forged mirror, and never lets a forger keep the id from the real one', () => {
    const forger = open('principal-b');
    expect(refusalOf(() => forger.session.handle({ type: 'registerClient', client: marked(F, 'app') }))).toBe('client_id_taken');
    // Before F is known as a member, the id looks like any dotted id and is taken; F's link then takes it back.
    known = () => false;
    forger.session.handle({ type: 'registerClient', client: marked(F, 'app') });
    known = members;
    const link = open('principal-a', F);
    link.session.handle({ type: 'registerClient', client: marked(F, 'app') });
    expect(router.getClient(`${F}.app`)?.sessionId).toBe(link.session.id);
    expect(forger.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
  });

  it('trusts a marker only from the link of the member it names', () => {
    const link = open('principal-a', G);
    expect(refusalOf(() => link.session.handle({ type: 'registerClient', client: marked(F, 'app') }))).toBe('client_id_taken');
  });
});

describe('Router without a policy: ids belong to the origin of the page that registered them', () => {
  let router: Router;

  beforeEach(() => {
    router = new Router({});
  });

  afterEach(async () => {
    await router.close();
  });

  /** A connection as a transport opens it without a policy: a page's origin, or none for a program. */
  const connect = (origin?: string) => {
    const transport = new FakeTransport('ws');
    return { transport, session: router.openSession(transport, undefined, originPrincipal(origin)) };
  };
  const register = (who: ReturnType<typeof connect>, id: string): string | undefined => {
    try {
      who.session.handle({ type: 'registerClient', client: client(id) });
      return undefined;
    } catch (error) {
      return error instanceof MdpError ? `${error.refusal}: ${error.message}` : String(error);
    }
  };

  it("a page of another origin cannot take a local program's id, nor another site's", () => {
    const app = connect();
    expect(register(app, 'o1')).toBeUndefined();
    const evil = connect('http://evil.example');
    expect(register(evil, 'o1')).toBe('client_id_taken: Client id held by another principal');
    expect(router.getClient('o1')?.sessionId).toBe(app.session.id);
    expect(app.transport.closes).toEqual([]);
    const site = connect('https://app.example');
    expect(register(site, 'page')).toBeUndefined();
    expect(register(evil, 'page')).toBe('client_id_taken: Client id held by another principal');
    expect(router.getClient('page')?.origin).toBeUndefined(); // FakeTransport carries no origin
  });

  it('a page replaces the ids its own origin holds (a reload), and a local program replaces any id', () => {
    const first = connect('https://app.example');
    expect(register(first, 'page')).toBeUndefined();
    const reloaded = connect('https://app.example');
    expect(register(reloaded, 'page')).toBeUndefined();
    expect(first.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
    const local = connect();
    expect(register(local, 'page')).toBeUndefined();
    expect(reloaded.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
    // Once a program holds it, the page's origin no longer does.
    expect(register(connect('https://app.example'), 'page')).toBe('client_id_taken: Client id held by another principal');
  });

  it('names the principal of a connection by its origin, none for a program', () => {
    expect(originPrincipal(undefined)).toBeUndefined();
    expect(originPrincipal('https://app.example')).toBe('origin:https://app.example');
    // The opaque origin: a principal of its own per connection.
    expect(originPrincipal('null')).toMatch(/^origin:null#[0-9a-f-]{36}$/);
    expect(originPrincipal('null')).not.toBe(originPrincipal('null'));
  });

  // Review finding: every `null` page was one principal, so any site's sandboxed iframe took over
  // (and, through the skill routes, read) the ids of a page opened from a file.
  it('a page of the opaque origin (null) replaces nothing of another null page, and nothing takes its id but a program', () => {
    const file = connect('null');
    expect(register(file, 'local-file-app')).toBeUndefined();
    const sandboxed = connect('null');
    expect(register(sandboxed, 'local-file-app')).toBe('client_id_taken: Client id held by another principal');
    expect(file.transport.closes).toEqual([]);
    // Its own session re-registers it freely (a catalog change by registerClient).
    expect(register(file, 'local-file-app')).toBeUndefined();
    expect(register(connect(), 'local-file-app')).toBeUndefined();
    expect(file.transport.closes).toEqual([{ code: 4000, reason: 'Replaced by newer client session' }]);
  });
});
