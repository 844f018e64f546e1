/**
 * Issue 36, finding 1: path counts were capped, bytes were not. Clients that each registered one
 * path with a 1 MB description grew the server without end (3.8 GB at 3,694 clients, then
 * `FatalProcessOutOfMemory`). The same attack at a small scale, against the built binary with
 * lowered caps: each cap is passed and refused with the reason naming it, and the server's
 * resident set stays under what the caps allow.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClientDescriptor } from '@mdp/protocol';
import { LoopTestClient, TestClient, descriptor, skill, stopAll, type Closed } from '@mdp/test-kit';
import { MB, startChild, stopChildren, type ChildServer } from './child.js';
import { read } from './clients.js';

afterEach(async () => {
  await stopAll();
  await stopChildren();
});

const CAPS = {
  description: 32 * 1024,
  catalog: 128 * 1024,
  total: MB,
  perAddress: 20,
};
const ARGS = [
  ...['--max-description-length', String(CAPS.description), '--max-schema-length', String(CAPS.description)],
  ...['--max-catalog-bytes', String(CAPS.catalog), '--max-total-catalog-bytes', String(CAPS.total)],
  ...['--max-clients-per-address', String(CAPS.perAddress)],
];
/**
 * Resident set a byte of catalog may cost at most (README "Security and limits": catalogs of empty
 * objects, the worst shape measured, take about 26 bytes of RSS per byte of JSON).
 */
const RSS_PER_CATALOG_BYTE = 27;

/** A client whose one skill has a description of `chars` characters. */
const described = (id: string, chars: number, paths = 1): ClientDescriptor =>
  descriptor(
    id,
    Array.from({ length: paths }, (_, i) => skill(`/s${i}/skill.md`, { description: 'x'.repeat(chars) })),
  );

/** Connect, send `registerClient` for `client`; resolves with the close, or `registered` once it applied. */
async function register(server: ChildServer, client: ClientDescriptor): Promise<Closed | 'registered'> {
  const socket = await TestClient.connect(server.ws);
  socket.handler = () => 'ok';
  socket.send({ type: 'registerClient', client });
  const pong = socket.next((m) => m.type === 'pong').then(() => 'registered' as const);
  socket.send({ type: 'ping', timestamp: 1 });
  return Promise.race([pong, socket.closed]);
}

/** The value of an unlabelled gauge on /metrics. */
async function gauge(server: ChildServer, name: string): Promise<number> {
  const text = await (await fetch(`${server.http}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} on /metrics`);
  return Number(line.split(' ')[1]);
}

describe('catalogs bounded in bytes', () => {
  it('refuses the 1 MB-description attack at each cap, and the resident set stays within what the caps allow', { timeout: 120_000 }, async () => {
    const server = await startChild(ARGS);
    const before = await server.memory(true);

    // 1. The attack as found: one path with a long description (1 MB in the finding). 100 of
    // 600,000 characters are 60 MB: held, they would take the server twice past the budget below.
    for (let i = 0; i < 100; i++) {
      expect(await register(server, described(`big${i}`, 600_000))).toEqual({
        code: 1009,
        reason: `paths[0].description is 600000 characters long; at most ${CAPS.description} are allowed (maxDescriptionLength)`,
      });
    }
    // 2. Descriptions within their cap, a catalog over its own.
    expect(await register(server, described('wide', CAPS.description, 5))).toEqual({
      code: 1009,
      reason: `Catalog is over ${CAPS.catalog} bytes as JSON (maxCatalogBytes)`,
    });

    // 3. Catalogs within every cap of their own, until all of them together are full.
    let accepted = 0;
    let full: Closed | undefined;
    while (full === undefined && accepted < 100) {
      const outcome = await register(server, described(`fill${accepted}`, CAPS.description, 3));
      if (outcome === 'registered') accepted++;
      else full = outcome;
    }
    expect(full?.code).toBe(1013);
    expect(full?.reason).toMatch(/^Catalogs here hold \d+ bytes; \d+ more would pass maxTotalCatalogBytes \(1048576\); try again later$/);
    const held = await gauge(server, 'mdp_catalog_bytes');
    expect(held).toBeLessThanOrEqual(CAPS.total);
    expect(held).toBeGreaterThan(CAPS.total - CAPS.catalog);

    // 4. Small clients from the same address, until it holds its share.
    let small = 0;
    let crowded: Closed | undefined;
    while (crowded === undefined && small < 100) {
      const outcome = await register(server, descriptor(`small${small}`, [skill('/s/skill.md')]));
      if (outcome === 'registered') small++;
      else crowded = outcome;
    }
    expect(accepted + small).toBe(CAPS.perAddress);
    expect(crowded).toEqual({ code: 4429, reason: `Too many clients from this address (maxClientsPerAddress ${CAPS.perAddress})` });
    // The HTTP loop is refused the same way: 429 past the address's share, 413 for a description over its cap.
    const loop = `${server.http}/mdp/http-loop`;
    const refused = await LoopTestClient.register(loop, descriptor('looped')).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(refused).toBe(`registerClient answered 429: {"error":"Too many clients from this address (maxClientsPerAddress ${CAPS.perAddress})"}`);

    // Everyone registered is served meanwhile.
    expect(await read(server.http, '/skills/small0/s')).toMatchObject({ status: 200, body: 'ok' });
    expect(await read(server.http, '/skills/fill0/s0')).toMatchObject({ status: 200, body: 'ok' });

    const after = await server.memory(true);
    const budget = before.rss + CAPS.total * RSS_PER_CATALOG_BYTE;
    expect(
      after.rss,
      `RSS ${(before.rss / MB).toFixed(0)} MB → ${(after.rss / MB).toFixed(0)} MB (peak ${(after.maxRss / MB).toFixed(0)} MB), budget ${(budget / MB).toFixed(0)} MB`,
    ).toBeLessThan(budget);
  });

  it('refuses an HTTP loop catalog over a byte cap with 413 naming it, and keeps the session', { timeout: 30_000 }, async () => {
    const server = await startChild(ARGS);
    const loop = `${server.http}/mdp/http-loop`;
    const client = await LoopTestClient.register(loop, descriptor('looped', [skill('/s/skill.md')]));
    const sent = await fetch(`${loop}/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mdp-session-id': client.sessionId },
      body: JSON.stringify({ message: { type: 'updateClientCatalog', clientId: 'looped', paths: described('x', CAPS.description + 1).paths } }),
    });
    expect(sent.status).toBe(413);
    expect(await sent.json()).toEqual({
      error: `paths[0].description is ${CAPS.description + 1} characters long; at most ${CAPS.description} are allowed (maxDescriptionLength)`,
    });
    client.handler = () => 'still here';
    expect(await read(server.http, '/skills/looped/s')).toMatchObject({ status: 200, body: 'still here' });
  });
});
